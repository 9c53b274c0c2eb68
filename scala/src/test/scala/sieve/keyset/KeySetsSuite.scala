package sieve.keyset

import scala.util.Random

import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{DataType, IntegerType, StringType}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import sieve.membership._
import sieve.valueset._

/** The per-row key tests, against a plain Scala set: never a false negative; exact ones never a false
 * positive; bloom filters near their target false-positive rate. */
class KeySetsSuite extends AnyFunSuite {
  private def longSet(keys: Iterable[Long]): LongSet = { val s = new LongSet(); keys.foreach(s.add); s }

  private def probes(keys: Set[Long], lo: Long, hi: Long, n: Int, rnd: Random): Seq[Long] =
    keys.toSeq ++ Seq(lo - 1, hi + 1, Long.MinValue, Long.MaxValue, 0L) ++
      Seq.fill(n)(lo + (rnd.nextDouble() * (hi - lo + 3)).toLong - 1)

  Seq(("dense: bitmap", 3000, 0L, 6000L), ("sparse: fingerprint and set", 3000, 0L, 3000000000L),
      ("negative keys", 500, -1000000L, -1L), ("one key", 1, 42L, 42L),
      ("the whole long range", 100, Long.MinValue, Long.MaxValue)).foreach { case (name, n, lo, hi) =>
    test(s"ExactLongTest, $name: exactly the set") {
      val rnd = new Random(n)
      val keys = (Seq(lo, hi) ++ Seq.fill(n)(lo + (rnd.nextDouble() * (BigDecimal(hi) - lo).toDouble).toLong)).toSet
      val test = new ExactLongTest(longSet(keys), keys.min, keys.max)
      probes(keys, lo, hi, 100000, rnd).foreach(v => assert(test.contains(v) === keys(v), s"key $v"))
    }
  }

  test("LongBitmap: add, contains, merge, runs in order; refuses a range it cannot hold") {
    val (a, b) = (new LongBitmap(-70, 200), new LongBitmap(-70, 200))
    Seq(-70L, -1L, 0L, 63L, 64L).foreach(a.add)
    Seq(5L, 200L).foreach(b.add)
    val m = a.merge(b)
    val runs = Seq.newBuilder[(Long, Long)]
    m.foreachRun((first, last) => runs += ((first, last)))
    assert(runs.result() === Seq((-70L, -70L), (-1L, 0L), (5L, 5L), (63L, 64L), (200L, 200L)))
    assert((-80L to 210L).filter(m.contains) === Seq(-70L, -1L, 0L, 5L, 63L, 64L, 200L))
    assert(!LongBitmap.fits(Long.MinValue, Long.MaxValue, Long.MaxValue))
    assert(!LongBitmap.fits(0, 1L << 20, 1L << 20) && LongBitmap.fits(0, (1L << 20) - 1, 1L << 20))
    intercept[IllegalArgumentException](a.merge(new LongBitmap(0, 200)))
  }

  test("BlockedBloomFilter: no false negative, false positives near the target, merges") {
    val rnd = new Random(7)
    val keys = Seq.fill(50000)(rnd.nextLong()).toSet
    def create() = BlockedBloomFilter.create(keys.size, 0.03, 1L << 30)
    val (one, other) = (create(), create())
    keys.zipWithIndex.foreach { case (k, i) => (if (i % 2 == 0) one else other).putLong(k) }
    val bloom = one.merge(other)
    keys.foreach(k => assert(bloom.mightContainLong(k), s"key $k"))
    val others = Iterator.continually(rnd.nextLong()).filterNot(keys).take(200000).toSeq
    val fpp = others.count(bloom.mightContainLong).toDouble / others.size
    assert(fpp < 0.045, s"false-positive rate $fpp")
    // capped: a smaller filter, more false positives, still no false negative
    val small = BlockedBloomFilter.create(keys.size, 0.03, 8192)
    keys.foreach(small.putLong)
    assert(small.bitSize === 8192 && keys.forall(small.mightContainLong))
    intercept[IllegalArgumentException](bloom.merge(small))
  }

  test("key rows: the in-set's fingerprint and the bloom filter hash a row's bytes") {
    val types: Seq[DataType] = Seq(IntegerType, StringType)
    val project = UnsafeProjection.create(types.toArray)
    def row(i: Int, s: String) = project(InternalRow(i, UTF8String.fromString(s))).copy()
    val keys = (0 until 2000).map(i => row(i % 37, s"v$i"))
    val set = new java.util.HashSet[org.apache.spark.sql.catalyst.expressions.UnsafeRow]()
    keys.foreach(set.add)
    val inSet = new InSetKeys(KeyShape(types), None, Some(set), None)
    val bloom = BlockedBloomFilter.create(keys.size, 0.03, 1L << 20)
    keys.foreach(bloom.putRow)
    keys.foreach { k => assert(inSet.mightContain(k) && bloom.mightContainRow(k)) }
    val misses = (0 until 20000).map(i => row(i % 37, s"w$i"))
    assert(!misses.exists(inSet.mightContain))
    assert(misses.count(bloom.mightContainRow) < 20000 * 0.05)
  }

  Seq(("dense, one mask: bitmap", 2000, 1, "bitmap"), ("dense, many masks: ids", 2000, 300, "dense ids"),
      ("dense, a few masks: ids and leaf bitmaps", 2000, 12, "dense ids"),
      ("mid-density: ranked ids", 100000, 5, "ranked ids"),
      ("sparse: hash set", 20000000, 5, "hash set")).foreach { case (name, range, leaves, kind) =>
    test(s"ValueSetBuilder, $name: each value's mask is the OR of its sources' masks") {
      val rnd = new Random(range)
      val words = (leaves - 1) / 64 + 1
      val builder = new ValueSetBuilder(integral = true, words)
      val expected = scala.collection.mutable.HashMap.empty[Long, Array[Long]]
      (0 until leaves).foreach { leaf =>
        val mask = Array.fill(words)(0L)
        mask(leaf / 64) = 1L << (leaf % 64)
        Seq.fill(400)(-500L + rnd.nextInt(range)).foreach { v =>
          builder.addLong(v, mask)
          expected.getOrElseUpdate(v, Array.fill(words)(0L))(leaf / 64) |= mask(leaf / 64)
        }
      }
      val set = builder.result()
      assert(set.kind.startsWith(kind) && set.size === expected.size)
      (expected.keys ++ (-600L until 3000L)).foreach { v =>
        val id = set.idOfLong(v)
        val got = if (id < 0) None else Some(set.masks.slice(id * words, id * words + words).toSeq)
        assert(got === expected.get(v).map(_.toSeq), s"value $v")
      }
      // each leaf's keys, as pushed into a scan, are exactly the values with its bit
      Seq(0, leaves - 1).foreach { b =>
        val keys = set.keysWithBit(b, org.apache.spark.sql.types.LongType, Long.MaxValue).get
        (expected.keys ++ (-600L until 3000L)).foreach { v =>
          assert(keys.mightContainLong(v) === expected.get(v).exists(m => (m(b / 64) & (1L << (b % 64))) != 0),
            s"value $v leaf $b")
        }
      }
      // leaf bitmaps, where kept, say the same as the masks
      assert((set.leafBitmaps != null) === name.contains("leaf bitmaps"))
      Option(set.leafBitmaps).foreach { maps =>
        assert(leaves <= ValueSetBuilder.MaxLeafBitmaps && maps.length === leaves)
        (-500L until -500L + range).foreach { v =>
          val o = v - set.denseLo
          (0 until leaves).foreach { b =>
            val inMap = (maps(b)((o >>> 6).toInt) & (1L << o)) != 0
            assert(inMap === expected.get(v).exists(m => (m(b / 64) & (1L << (b % 64))) != 0), s"value $v leaf $b")
          }
        }
      }
    }
  }

  test("ValueSetBuilder: trimmed (dense chunks as bits) and sent through Java serialization, the same set") {
    val rnd = new Random(5)
    def build(send: Boolean): ValueSet = {
      val b = new ValueSetBuilder(integral = true, words = 1)
      Seq.fill(5000)(rnd.nextInt(8000).toLong).foreach(b.addLong(_, Array(1L)))   // dense: bits
      Seq.fill(50)(rnd.nextLong() >>> 20).foreach(b.addLong(_, Array(2L)))         // sparse: longs
      Seq(-3L, 0L, 5L).foreach(b.addLong(_, Array(4L)))                            // few: longs
      if (!send) b.result()
      else {
        val bytes = new java.io.ByteArrayOutputStream()
        val out = new java.io.ObjectOutputStream(bytes)
        out.writeObject(b.trim())
        out.close()
        new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray))
          .readObject().asInstanceOf[ValueSetBuilder].result()
      }
    }
    val seed = rnd.nextLong()
    rnd.setSeed(seed); val local = build(send = false)
    rnd.setSeed(seed); val sent = build(send = true)
    assert(sent.size === local.size)
    (Seq(-3L, 0L, 5L, 9000L) ++ (0L until 8000L)).foreach { v =>
      def mask(s: ValueSet) = { val id = s.idOfLong(v); if (id < 0) 0L else s.masks(id) }
      assert(mask(sent) === mask(local), s"value $v")
    }
  }

  Seq((5, "short list"), (ValueSetBuilder.ShortListValues + 1, "hash set")).foreach { case (n, kind) =>
    test(s"ValueSetBuilder, $n strings: $kind, each value's mask the OR of its sources'") {
      val builder = new ValueSetBuilder(integral = false, words = 1)
      def add(s: String, mask: Long) = { val b = s.getBytes("UTF-8"); builder.addBytes(b, Platform.BYTE_ARRAY_OFFSET, b.length, Array(mask)) }
      val values = (0 until n).map(i => s"brand$i")
      values.foreach(add(_, 1L))
      values.take(2).foreach(add(_, 2L))
      val set = builder.result()
      assert(set.kind === kind && set.size === n)
      def maskOf(s: String) = {
        val b = s.getBytes("UTF-8")
        val id = set.idOfBytes(b, Platform.BYTE_ARRAY_OFFSET, b.length)
        if (id < 0) 0L else set.masks(id)
      }
      values.zipWithIndex.foreach { case (v, i) => assert(maskOf(v) === (if (i < 2) 3L else 1L), v) }
      Seq("brand", "brand00", "Brand0", "", s"brand$n").foreach(v => assert(maskOf(v) === 0L, v))
      val pushed = set.keysWithBit(1, org.apache.spark.sql.types.StringType, 100).get
      val project = UnsafeProjection.create(Array[org.apache.spark.sql.types.DataType](org.apache.spark.sql.types.StringType))
      values.zipWithIndex.foreach { case (v, i) =>
        assert(pushed.mightContain(project(InternalRow(UTF8String.fromString(v)))) === (i < 2), v)
      }
    }
  }
}
