package sieve.keyset

import org.apache.spark.sql.catalyst.expressions.{Literal, UnsafeRow}
import org.apache.spark.sql.types.DataType

import sieve.membership._

/**
 * A set of keys as a per-row test reads it (never with a NULL key: a NULL key is in no set, as a join
 * drops it). The dynamic filter chooses a kind from the creation side's real keys; the exact kinds
 * (`exact`: no false positive) are the ones a bulk filter may use, its answer being exact.
 */
sealed trait KeySet extends Serializable {
  /** `in-set`, `bitmap`, `bloom`, `empty` or `pass-through`, as explain and the metrics name it. */
  def kind: String
  /** True when `mightContain` holds for exactly the keys of the set (no false positive). */
  def exact: Boolean
  def describe: String
  def mightContain(key: UnsafeRow): Boolean
  /** The same for a single integral key, as a long (see [[KeyShape.asLong]]). */
  def mightContainLong(v: Long): Boolean
  /** The keys' [min, max] for a single integral key: pushed into the scan, checked first per row. */
  def range: Option[(Long, Long)]
  /** At most `limit` intervals covering every key of a single integral key (pushed into the scan). */
  def ranges(limit: Int): Option[KeyRanges] = range.map { case (lo, hi) => KeyRanges.single(lo, hi) }
  /** The exact keys of a single-column key as literals of `dataType`, when at most `limit`. */
  def inLiterals(dataType: DataType, limit: Long): Option[Seq[Literal]] = None
}

object KeySet {
  /** A long key back in its own type's literal value (the inverse of [[KeyShape.asLong]]). */
  def fromLong(v: Long, dataType: DataType): Any = dataType match {
    case org.apache.spark.sql.types.ByteType => v.toByte
    case org.apache.spark.sql.types.ShortType => v.toShort
    case org.apache.spark.sql.types.IntegerType | org.apache.spark.sql.types.DateType => v.toInt
    case _ => v
  }

  def literal(v: Long, dataType: DataType): Literal = Literal(fromLong(v, dataType), dataType)
}

/** No creation-side key at all: no application row can join. */
case object EmptyKeySet extends KeySet {
  def kind: String = "empty"
  def exact: Boolean = true
  def describe: String = "empty (the creation side has no keys: every row is dropped)"
  def mightContain(key: UnsafeRow): Boolean = false
  def mightContainLong(v: Long): Boolean = false
  def range: Option[(Long, Long)] = None
  override def ranges(limit: Int): Option[KeyRanges] = Some(KeyRanges(Array.empty))
}

/** The creation side's keys could not be read: every row passes. */
case object PassThrough extends KeySet {
  def kind: String = "pass-through"
  def exact: Boolean = false
  def describe: String = "pass-through (the creation side's keys could not be read)"
  def mightContain(key: UnsafeRow): Boolean = true
  def mightContainLong(v: Long): Boolean = true
  def range: Option[(Long, Long)] = None
}

/** The exact distinct keys. */
final class InSetKeys(shape: KeyShape, longs: Option[LongSet], rows: Option[java.util.HashSet[UnsafeRow]],
    val range: Option[(Long, Long)]) extends KeySet {
  private val toLong = shape.asLong.orNull
  val size: Int = longs.map(_.size).getOrElse(rows.get.size)

  def kind: String = "in-set"
  def exact: Boolean = true
  def describe: String = s"in-set of $size keys" + range.map { case (lo, hi) => s", range [$lo, $hi]" }.getOrElse("")

  private val (lo, hi) = range.getOrElse((Long.MinValue, Long.MaxValue))
  // built where the rows are tested, once per executor (the broadcast value is shared by its tasks)
  @transient private lazy val longTest = longs.map(new ExactLongTest(_, lo, hi)).orNull
  private val rowSet = rows.orNull
  @transient private lazy val rowPrint = rows.map { set =>
    val f = new Fingerprint(set.size)
    set.forEach(r => f.add(KeyHash.ofRow(r)))
    f
  }.orNull

  def mightContain(key: UnsafeRow): Boolean =
    if (toLong != null) mightContainLong(toLong(key))
    else rowPrint.mightContain(KeyHash.ofRow(key)) && rowSet.contains(key)

  def mightContainLong(v: Long): Boolean = longTest.contains(v)

  override def ranges(limit: Int): Option[KeyRanges] = (longs, range) match {
    case (Some(ls), Some(_)) =>
      val keys = new Array[Long](ls.size)
      var i = 0
      ls.foreach { v => keys(i) = v; i += 1 }
      Some(KeyRanges.cover(keys, limit))
    case _ => super.ranges(limit)
  }

  override def inLiterals(dataType: DataType, limit: Long): Option[Seq[Literal]] =
    if (size > limit || shape.types.size != 1) None
    else Some {
      val values = Seq.newBuilder[Literal]
      longs match {
        case Some(ls) => ls.foreach(v => values += KeySet.literal(v, dataType))
        case None => rows.get.forEach(r => values += Literal(r.get(0, dataType), dataType))
      }
      values.result()
    }
}

/** Too many keys for an exact set, but dense within their range (surrogate keys): a bitmap over the
 * range, exact and one load per row. */
final class BitmapKeys(shape: KeyShape, bitmap: LongBitmap, val keys: Long) extends KeySet {
  private val toLong = shape.asLong.get

  def kind: String = "bitmap"
  def exact: Boolean = true
  def bytes: Long = bitmap.bytes
  /** The distinct keys (`keys` counts the creation side's key rows). */
  lazy val distinct: Long = bitmap.cardinality
  def describe: String = s"bitmap of $bytes bytes, range [${bitmap.lo}, ${bitmap.hi}]"
  def range: Option[(Long, Long)] = Some((bitmap.lo, bitmap.hi))
  def mightContain(key: UnsafeRow): Boolean = bitmap.contains(toLong(key))
  def mightContainLong(v: Long): Boolean = bitmap.contains(v)
  override def ranges(limit: Int): Option[KeyRanges] = Some(KeyRanges.coverRuns(bitmap.foreachRun, limit))
}

/** Too many keys for an exact set: a bloom filter (false positives, no false negatives) and the range. */
final class BloomKeys(shape: KeyShape, bloom: BlockedBloomFilter, val range: Option[(Long, Long)],
    val keys: Long) extends KeySet {
  private val toLong = shape.asLong.orNull

  def kind: String = "bloom"
  def exact: Boolean = false
  def bytes: Long = bloom.bitSize / 8
  def describe: String =
    s"bloom filter of $bytes bytes" + range.map { case (lo, hi) => s", range [$lo, $hi]" }.getOrElse("")

  private val (lo, hi) = range.getOrElse((Long.MinValue, Long.MaxValue))

  def mightContain(key: UnsafeRow): Boolean =
    if (toLong != null) mightContainLong(toLong(key)) else bloom.mightContainRow(key)

  def mightContainLong(v: Long): Boolean = v >= lo && v <= hi && bloom.mightContainLong(v)
}

private[sieve] object BloomKeysBuilder {
  def put(bloom: BlockedBloomFilter, shape: KeyShape, key: UnsafeRow): Unit = shape.asLong match {
    case Some(toLong) => bloom.putLong(toLong(key))
    case None => bloom.putRow(key)
  }
}
