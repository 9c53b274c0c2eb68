package sieve.valueset

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, StringType}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.unsafe.types.UTF8String

import sieve.keyset.{BitmapKeys, EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/**
 * The exact values of one bulk-filter key column, each with the mask of the leaves whose sources hold
 * it: `idOf*` answers the id of the value's mask (its `words` longs at `masks(id * words)`), or -1 for a
 * value in no source. Never approximate (a bulk filter's answer is exact). Built by [[ValueSetBuilder]].
 */
sealed abstract class ValueSet extends Serializable {
  def words: Int
  def masks: Array[Long]
  def size: Long
  def bytes: Long
  def kind: String
  def idOfLong(v: Long): Int
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int

  def describe: String = s"$kind of $size values, ${masks.length / math.max(words, 1)} masks, $bytes bytes"

  /** One bitmap per mask bit over offsets from [[denseLo]] (bit o of bitmap b: value denseLo + o has bit b),
   * where this set keeps them, else null: a leaf's test is then one load from its own bitmap, whose few
   * hundred KB stay in cache far better than the column's id array that every leaf shares. */
  def leafBitmaps: Array[Array[Long]] = null
  def denseLo: Long = 0L

  /** The values whose mask has `bit` (one leaf's values) as a [[KeySet]] of a `dataType` key, for pushing
   * into a scan; None when this set cannot say them cheaply (more than `limit` byte-string values). */
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet]

  protected def hasBit(id: Int, bit: Int): Boolean = (masks(id * words + bit / 64) & (1L << bit)) != 0

  /** Strings only (binary and other keys are not pushed), as one-column rows. */
  protected def stringKeys(dataType: DataType, foreach: ((AnyRef, Long, Int, Int) => Unit) => Unit,
      bit: Int): Option[KeySet] =
    if (!dataType.isInstanceOf[StringType]) None
    else {
      val rows = new java.util.HashSet[UnsafeRow]()
      val project = UnsafeProjection.create(Array[DataType](dataType))
      foreach { (base, offset, length, id) =>
        if (hasBit(id, bit)) {
          val bytes = new Array[Byte](length)
          Platform.copyMemory(base, offset, bytes, Platform.BYTE_ARRAY_OFFSET, length)
          rows.add(project(InternalRow(UTF8String.fromBytes(bytes))).copy())
        }
      }
      Some(if (rows.isEmpty) EmptyKeySet else new InSetKeys(KeyShape(Seq(dataType)), None, Some(rows), None))
    }

  protected def longKeys(dataType: DataType, foreach: ((Long, Int) => Unit) => Unit, bit: Int): Option[KeySet] = {
    val shape = KeyShape(Seq(dataType))
    if (shape.asLong.isEmpty) return None
    val set = new LongSet()
    var (lo, hi) = (Long.MaxValue, Long.MinValue)
    foreach { (v, id) =>
      if (hasBit(id, bit)) { set.add(v); lo = math.min(lo, v); hi = math.max(hi, v) }
    }
    Some(if (set.size == 0) EmptyKeySet else new InSetKeys(shape, Some(set), None, Some((lo, hi))))
  }
}

/** Long values, hashed, behind a cache-sized fingerprint that turns most absent values away in one load. */
final class LongValueSet(map: LongIdMap, fingerprint: Fingerprint, val words: Int, val masks: Array[Long])
    extends ValueSet {
  def size: Long = map.size
  def bytes: Long = map.bytes + masks.length * 8L
  def kind: String = "hash set"
  def idOfLong(v: Long): Int = if (fingerprint.mightContain(KeyHash.ofLong(v))) map.get(v) else -1
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int = throw new UnsupportedOperationException
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] = longKeys(dataType, map.foreach, bit)
}

/** Dense long values that all have the same mask (id 0): one bit each, one load per test, no hash. */
final class BitmapValueSet(bitmap: LongBitmap, count: Long, val words: Int, val masks: Array[Long])
    extends ValueSet {
  def size: Long = count
  def bytes: Long = bitmap.bytes + masks.length * 8L
  def kind: String = s"bitmap over [${bitmap.lo}, ${bitmap.hi}]"
  def idOfLong(v: Long): Int = if (bitmap.contains(v)) 0 else -1
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int = throw new UnsupportedOperationException
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] =
    if (!hasBit(0, bit)) Some(EmptyKeySet)
    else Some(KeyShape(Seq(dataType))).filter(_.asLong.isDefined).map(new BitmapKeys(_, bitmap, count))
}

/** Dense long values of several masks: value v's id + 1 at `ids(v - lo)` (0: in no source), one load per
 * test, no hash. */
final class DenseValueSet(lo: Long, ids: DenseIds, count: Long, val words: Int, val masks: Array[Long],
    override val leafBitmaps: Array[Array[Long]]) extends ValueSet {
  def size: Long = count
  def bytes: Long = ids.bytesUsed + masks.length * 8L +
    (if (leafBitmaps == null) 0L else leafBitmaps.map(_.length * 8L).sum)
  override def denseLo: Long = lo
  def kind: String = s"dense ids over [$lo, ${lo + ids.length - 1}]"
  def idOfLong(v: Long): Int = { val o = v - lo; if (o >= 0 && o < ids.length) ids(o.toInt) - 1 else -1 }
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int = throw new UnsupportedOperationException
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] = longKeys(dataType, foreach, bit)

  private def foreach(f: (Long, Int) => Unit): Unit = {
    var o = 0
    while (o < ids.length) { val id = ids(o); if (id > 0) f(lo + o, id - 1); o += 1 }
  }
}

/** Integer values too sparse in their range for an id per slot but dense enough for a bit per slot: a
 * bitmap of the range, the number of values before each of its words, and the values' ids in order —
 * about 2-3 bytes a value (a hash set takes ~24) and, for a value in the set, three loads instead of a
 * hash and a search of a table tens of times larger. */
final class RankedValueSet(lo: Long, bits: Array[Long], ranks: Array[Int], ids: DenseIds, val words: Int,
    val masks: Array[Long]) extends ValueSet {
  def size: Long = ids.length
  def bytes: Long = bits.length * 12L + ids.bytesUsed + masks.length * 8L
  def kind: String = s"ranked ids over [$lo, ${lo + bits.length * 64L - 1}]"
  def idOfLong(v: Long): Int = {
    val o = v - lo
    if (o < 0 || o >= bits.length * 64L || (bits((o >>> 6).toInt) & (1L << o)) == 0) -1
    else ids(RankedValueSet.rank(bits, ranks, o)) - 1
  }
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int = throw new UnsupportedOperationException
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] = longKeys(dataType, foreach, bit)

  private def foreach(f: (Long, Int) => Unit): Unit = {
    var rank = 0 // values come in ascending order: the i-th set bit has the i-th id
    LongBitmap.foreachSet(bits) { o => f(lo + o, ids(rank) - 1); rank += 1 }
  }
}

object RankedValueSet {
  /** The position among the set bits of `bits` of bit `o` (set), from `ranks`: the set bits before each word. */
  def rank(bits: Array[Long], ranks: Array[Int], o: Long): Int =
    ranks((o >>> 6).toInt) + java.lang.Long.bitCount(bits((o >>> 6).toInt) & ((1L << o) - 1))
}

/** Byte-string values (strings, binary, key rows), hashed, behind a fingerprint. */
final class BytesValueSet(map: BytesIdMap, fingerprint: Fingerprint, val words: Int, val masks: Array[Long])
    extends ValueSet {
  def size: Long = map.size
  def bytes: Long = map.bytes + masks.length * 8L
  def kind: String = "hash set"
  def idOfLong(v: Long): Int = throw new UnsupportedOperationException
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int =
    if (fingerprint.mightContain(KeyHash.ofBytes(base, offset, length))) map.get(base, offset, length) else -1
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] =
    if (size > limit) None else stringKeys(dataType, map.foreach, bit)
}

/** A few byte-string values (a short list of strings), compared one by one: for a handful of values a
 * length check and one or two word compares cost less than hashing the key. */
final class SmallBytesValueSet(values: Array[Array[Byte]], ids: Array[Int], val words: Int, val masks: Array[Long])
    extends ValueSet {
  def size: Long = values.length
  def bytes: Long = values.map(_.length + 16L).sum + masks.length * 8L
  def kind: String = "short list"
  def idOfLong(v: Long): Int = throw new UnsupportedOperationException
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int = {
    var i = 0
    while (i < values.length) {
      val v = values(i)
      if (v.length == length &&
        ByteArrayMethods.arrayEquals(base, offset, v, Platform.BYTE_ARRAY_OFFSET, length)) return ids(i)
      i += 1
    }
    -1
  }
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] =
    stringKeys(dataType, f => values.indices.foreach { i =>
      f(values(i), Platform.BYTE_ARRAY_OFFSET, values(i).length, ids(i))
    }, bit)
}

/** Sources with no values: every key is in no source. */
final class EmptyValueSet(val words: Int) extends ValueSet {
  def masks: Array[Long] = Array.emptyLongArray
  def size: Long = 0
  def bytes: Long = 0
  def kind: String = "empty set"
  def idOfLong(v: Long): Int = -1
  def idOfBytes(base: AnyRef, offset: Long, length: Int): Int = -1
  def keysWithBit(bit: Int, dataType: DataType, limit: Long): Option[KeySet] = Some(EmptyKeySet)
}

/** Where generated code finds the value sets of a filter: filled on the driver before any task runs (the
 * code is generated before the sets are built). */
trait ValueSets extends Serializable {
  def apply(column: Int): ValueSet
}
