package sieve.valueset

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.unsafe.Platform

import sieve.keyset.{EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/**
 * Builds a [[ValueSet]] in two steps. Where the values are read (one builder per task), they are only
 * appended to chunks, one per leaf mask — a few nanoseconds a value, no hashing; builders merge by
 * concatenating their chunks. `result()`, once, on the driver, makes the structure from all of them,
 * sized for their count: a bitmap straight from the values when they are dense integers of one mask,
 * an array of mask ids over their range when they are dense integers of several, else a hash map
 * `value -> interned mask` (a value read twice ORs its masks).
 */
final class ValueSetBuilder(val integral: Boolean, val words: Int) extends Serializable {
  private val chunks = ArrayBuffer.empty[ValueChunk]
  @transient private var current: ValueChunk = _
  @transient private var currentMask: Array[Long] = _ // the caller's array `current` was found for

  /** Values appended so far (repeats counted). */
  def count: Long = chunks.iterator.map(_.count.toLong).sum

  def addLong(v: Long, mask: Array[Long]): Unit = chunkFor(mask).addLong(v)

  def addBytes(base: AnyRef, offset: Long, length: Int, mask: Array[Long]): Unit =
    chunkFor(mask).addBytes(base, offset, length)

  private def chunkFor(mask: Array[Long]): ValueChunk = {
    if (current == null || !(currentMask eq mask)) {
      current = chunks.find(c => java.util.Arrays.equals(c.mask, mask)).getOrElse {
        val c = new ValueChunk(mask.clone(), integral)
        chunks += c
        c
      }
      currentMask = mask
    }
    current
  }

  /** Drops the chunks' unused capacity (before this builder is sent to the driver). */
  def trim(): this.type = { chunks.foreach(_.trim()); this }

  def merge(other: ValueSetBuilder): ValueSetBuilder = {
    require(other.integral == integral && other.words == words, "value sets of different shapes")
    chunks ++= other.chunks
    current = null
    this
  }

  def result(): ValueSet = {
    val total = math.min(count, Int.MaxValue / 2).toInt
    val oneMask = chunks.map(c => java.util.Arrays.hashCode(c.mask) -> c.mask.toSeq).distinct.size == 1
    if (total == 0) new EmptyValueSet(words)
    else if (integral) {
      var (lo, hi) = (Long.MaxValue, Long.MinValue)
      chunks.foreach(_.foreachLong { v => if (v < lo) lo = v; if (v > hi) hi = v })
      if (oneMask && LongBitmap.fits(lo, hi, ValueSetBuilder.BitmapBitsPerValue * total)) {
        val bitmap = new LongBitmap(lo, hi)
        chunks.foreach(_.foreachLong(bitmap.add))
        new BitmapValueSet(bitmap, bitmap.cardinality, words, chunks.head.mask.clone())
      } else if (LongBitmap.fits(lo, hi, math.min(ValueSetBuilder.DenseSlotsPerValue * total, ValueSetBuilder.MaxDenseSlots))) {
        val ids = new DenseIds((hi - lo + 1).toInt)
        val masks = new MaskTable(words)
        var count = 0L
        chunks.foreach { c =>
          val or = new masks.OrWith(c.mask)
          c.foreachLong { v =>
            val o = (v - lo).toInt
            val id = ids(o)
            if (id == 0) count += 1
            ids(o) = or(id - 1) + 1
          }
        }
        new DenseValueSet(lo, ids, count, words, masks.flat, leafBitmaps(lo, ids.length))
      } else if (LongBitmap.fits(lo, hi, math.min(ValueSetBuilder.RankedSlotsPerValue * total, ValueSetBuilder.MaxDenseSlots))) {
        val bits = new Array[Long](((hi - lo) >>> 6).toInt + 1)
        chunks.foreach(_.foreachLong(v => LongBitmap.set(bits, v - lo)))
        val ranks = new Array[Int](bits.length)
        var before = 0
        var w = 0
        while (w < bits.length) { ranks(w) = before; before += java.lang.Long.bitCount(bits(w)); w += 1 }
        val ids = new DenseIds(before)
        val masks = new MaskTable(words)
        chunks.foreach { c =>
          val or = new masks.OrWith(c.mask)
          c.foreachLong { v => val at = RankedValueSet.rank(bits, ranks, v - lo); ids(at) = or(ids(at) - 1) + 1 }
        }
        new RankedValueSet(lo, bits, ranks, ids, words, masks.flat)
      } else {
        // sized for the values read (repeats included) at most half of them repeats; it grows if not
        val map = new LongIdMap(total / 2)
        val table = if (oneMask) {
          chunks.foreach(_.foreachLong(map.putIfAbsent(_, 0)))
          chunks.head.mask.clone()
        } else {
          val masks = new MaskTable(words)
          chunks.foreach { c => val or = new masks.OrWith(c.mask); c.foreachLong(v => map.update(v, or)) }
          masks.flat
        }
        val fp = new Fingerprint(map.size)
        map.foreach((v, _) => fp.add(KeyHash.ofLong(v)))
        new LongValueSet(map, fp, words, table)
      }
    } else {
      val map = new BytesIdMap(total / 2)
      val masks = new MaskTable(words)
      chunks.foreach { c =>
        val or = new masks.OrWith(c.mask)
        c.foreachBytes((base, offset, length) => map.update(base, offset, length, or))
      }
      if (map.size <= ValueSetBuilder.ShortListValues) {
        val (values, ids) = (Array.newBuilder[Array[Byte]], Array.newBuilder[Int])
        map.foreach { (base, offset, length, id) =>
          val bytes = new Array[Byte](length)
          Platform.copyMemory(base, offset, bytes, Platform.BYTE_ARRAY_OFFSET, length)
          values += bytes
          ids += id
        }
        new SmallBytesValueSet(values.result(), ids.result(), words, masks.flat)
      } else {
        val fp = new Fingerprint(map.size)
        map.foreach((base, offset, length, _) => fp.add(KeyHash.ofBytes(base, offset, length)))
        new BytesValueSet(map, fp, words, masks.flat)
      }
    }
  }

  /** A bitmap over [lo, lo + length) for each mask bit of the chunks, when they number at most
   * `MaxLeafBitmaps` (so they take at most twice the id array's bytes), else null. */
  private def leafBitmaps(lo: Long, length: Int): Array[Array[Long]] = {
    val bits = chunks.map(c => c.mask.indices.map(w => if (c.mask(w) == 0) 0 else w * 64 + 64 -
      java.lang.Long.numberOfLeadingZeros(c.mask(w))).max).max
    if (bits == 0 || bits > ValueSetBuilder.MaxLeafBitmaps) return null
    val maps = Array.fill(bits)(new Array[Long]((length + 63) / 64))
    chunks.foreach { c =>
      (0 until bits).filter(b => (c.mask(b / 64) & (1L << b)) != 0).foreach { b =>
        val map = maps(b)
        c.foreachLong(v => LongBitmap.set(map, v - lo))
      }
    }
    maps
  }
}

object ValueSetBuilder {
  /** Leaf bitmaps are kept for dense values of at most this many leaves. */
  val MaxLeafBitmaps = 16
  /** A hash set costs ~24 bytes (192 bits) per value at its load factor: a bitmap of up to 64 bits per
   * value is smaller and cheaper to probe. */
  val BitmapBitsPerValue = 64L
  /** Dense ids cost 1 to 4 bytes a slot: at up to 16 slots a value, no more than a hash set, and one load
   * per probe instead of a hash and a search. */
  val DenseSlotsPerValue = 16L
  val MaxDenseSlots: Long = 1L << 28
  /** A bit a slot, a rank per 64 slots and an id a value: at up to 128 slots a value, still smaller than a
   * hash set, and probed without a hash. */
  val RankedSlotsPerValue = 128L
  /** Byte-string values up to this many are compared one by one instead of hashed. */
  val ShortListValues = 8
}

/** The values read with one mask: longs, or byte strings end to end. */
final class ValueChunk(val mask: Array[Long], integral: Boolean) extends Serializable {
  @transient private var longs = if (integral) new Array[Long](256) else null
  private var data = if (integral) null else new Array[Byte](1024)
  private var ends = if (integral) null else new Array[Int](256) // ends(i): where value i's bytes end
  private var used = 0
  var count = 0

  // once trimmed, dense longs are held as bits from `bitsLo` (they travel to the driver up to 64x smaller)
  @transient private var bits: Array[Long] = _
  private var bitsLo = 0L

  def addLong(v: Long): Unit = {
    require(bits == null, "values added to a trimmed chunk")
    if (count == longs.length) longs = java.util.Arrays.copyOf(longs, grown(count))
    longs(count) = v
    count += 1
  }

  def addBytes(base: AnyRef, offset: Long, length: Int): Unit = {
    if (count == ends.length) ends = java.util.Arrays.copyOf(ends, grown(count))
    if (used.toLong + length > data.length) {
      require(used.toLong + length <= Int.MaxValue - 16, "more than 2 GB of values in one task")
      data = java.util.Arrays.copyOf(data, math.max(grown(data.length), used + length))
    }
    Platform.copyMemory(base, offset, data, Platform.BYTE_ARRAY_OFFSET + used, length)
    used += length
    ends(count) = used
    count += 1
  }

  // the long arrays written as bytes in bulk (Java serialization writes a long[] a long at a time)
  private def writeObject(out: java.io.ObjectOutputStream): Unit = {
    out.defaultWriteObject()
    ValueChunk.writeLongs(out, longs)
    ValueChunk.writeLongs(out, bits)
  }

  private def readObject(in: java.io.ObjectInputStream): Unit = {
    in.defaultReadObject()
    longs = ValueChunk.readLongs(in)
    bits = ValueChunk.readLongs(in)
  }

  private def grown(n: Int): Int = math.min(n.toLong * 2, Int.MaxValue - 16L).toInt

  def foreachLong(f: Long => Unit): Unit =
    if (bits == null) { var i = 0; while (i < count) { f(longs(i)); i += 1 } }
    else LongBitmap.foreachSet(bits)(o => f(bitsLo + o))

  def foreachBytes(f: (AnyRef, Long, Int) => Unit): Unit = {
    var (i, start) = (0, 0)
    while (i < count) { f(data, Platform.BYTE_ARRAY_OFFSET + start, ends(i) - start); start = ends(i); i += 1 }
  }

  def trim(): Unit =
    if (bits != null) ()
    else if (longs != null) {
      var (lo, hi) = (Long.MaxValue, Long.MinValue)
      var i = 0
      while (i < count) { val v = longs(i); if (v < lo) lo = v; if (v > hi) hi = v; i += 1 }
      if (count >= 64 && LongBitmap.fits(lo, hi, count * 64L)) { // at most 64 bits a value: no larger
        bits = new Array[Long](((hi - lo) >>> 6).toInt + 1)
        bitsLo = lo
        i = 0
        while (i < count) { LongBitmap.set(bits, longs(i) - lo); i += 1 }
        longs = null
        count = bits.foldLeft(0)((n, w) => n + java.lang.Long.bitCount(w))
      } else longs = java.util.Arrays.copyOf(longs, count)
    } else { data = java.util.Arrays.copyOf(data, used); ends = java.util.Arrays.copyOf(ends, count) }
}

private object ValueChunk {
  def writeLongs(out: java.io.ObjectOutputStream, a: Array[Long]): Unit =
    if (a == null) out.writeInt(-1)
    else {
      out.writeInt(a.length)
      val buf = new Array[Byte](math.min(a.length, 8192) * 8)
      var i = 0
      while (i < a.length) {
        val n = math.min(a.length - i, buf.length / 8)
        Platform.copyMemory(a, Platform.LONG_ARRAY_OFFSET + i * 8L, buf, Platform.BYTE_ARRAY_OFFSET, n * 8L)
        out.write(buf, 0, n * 8)
        i += n
      }
    }

  def readLongs(in: java.io.ObjectInputStream): Array[Long] = {
    val length = in.readInt()
    if (length < 0) null
    else {
      val a = new Array[Long](length)
      val buf = new Array[Byte](math.min(length, 8192) * 8)
      var i = 0
      while (i < length) {
        val n = math.min(length - i, buf.length / 8)
        in.readFully(buf, 0, n * 8)
        Platform.copyMemory(buf, Platform.BYTE_ARRAY_OFFSET, a, Platform.LONG_ARRAY_OFFSET + i * 8L, n * 8L)
        i += n
      }
      a
    }
  }
}
