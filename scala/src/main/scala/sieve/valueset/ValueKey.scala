package sieve.valueset

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import sieve.keyset.{EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/**
 * How a value of a bulk-filter key type is held in a [[ValueSet]], by exact equality: an integral
 * value (byte to long, date, timestamps, boolean, ANSI intervals, decimals of up to 18 digits as their
 * unscaled long) as a long; a string as its UTF-8 bytes; binary as its bytes; any other type as the bytes
 * of a one-column UnsafeRow. The value must already be in its comparison form (floats normalised, a
 * non-binary collation's collation key), so that byte equality is Spark's `=`.
 */
sealed trait ValueKey

object ValueKey {
  case object Integral extends ValueKey
  case object Utf8 extends ValueKey
  case object Bytes extends ValueKey
  case object Row extends ValueKey

  def of(t: DataType): ValueKey = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType |
         BooleanType | _: YearMonthIntervalType | _: DayTimeIntervalType => Integral
    case d: DecimalType if d.precision <= Decimal.MAX_LONG_DIGITS => Integral
    case _: StringType => Utf8
    case BinaryType => Bytes
    case _ => Row
  }

  /** An integral value (as Spark holds it in a row) as the long the set holds. */
  def toLong(v: Any): Long = v match {
    case b: Byte => b.toLong
    case s: Short => s.toLong
    case i: Int => i.toLong
    case l: Long => l
    case b: Boolean => if (b) 1L else 0L
    case d: Decimal => d.toUnscaledLong
    case other => throw new IllegalArgumentException(s"not an integral key value: $other")
  }

  /** Java code for the long of the integral value `v` of type `t`, for generated code. */
  def javaLong(t: DataType, v: String): String = t match {
    case BooleanType => s"($v ? 1L : 0L)"
    case _: DecimalType => s"$v.toUnscaledLong()"
    case _ => s"((long) $v)"
  }

  /** What puts field 0 of a row (not NULL) into a builder: the value's long, or its bytes. */
  def adder(t: DataType): (UnsafeRow, ValueSetBuilder, Array[Long]) => Unit = of(t) match {
    case Integral =>
      val read: UnsafeRow => Long = t match {
        case ByteType => _.getByte(0).toLong
        case ShortType => _.getShort(0).toLong
        case IntegerType | DateType | _: YearMonthIntervalType => _.getInt(0).toLong
        case BooleanType => r => if (r.getBoolean(0)) 1L else 0L
        case d: DecimalType => _.getDecimal(0, d.precision, d.scale).toUnscaledLong
        case _ => _.getLong(0)
      }
      (row, set, mask) => set.addLong(read(row), mask)
    case Utf8 => (row, set, mask) =>
      val s = row.getUTF8String(0)
      set.addBytes(s.getBaseObject, s.getBaseOffset, s.numBytes, mask)
    case Bytes => (row, set, mask) =>
      val b = row.getBinary(0)
      set.addBytes(b, Platform.BYTE_ARRAY_OFFSET, b.length, mask)
    case Row => (row, set, mask) => set.addBytes(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes, mask)
  }

  /** The id of `value` (not NULL; a Row key's value is its one-column UnsafeRow) in `set`. */
  def idOf(kind: ValueKey, value: Any, set: ValueSet): Int = kind match {
    case Integral => set.idOfLong(toLong(value))
    case Utf8 =>
      val s = value.asInstanceOf[UTF8String]
      set.idOfBytes(s.getBaseObject, s.getBaseOffset, s.numBytes)
    case Bytes =>
      val b = value.asInstanceOf[Array[Byte]]
      set.idOfBytes(b, Platform.BYTE_ARRAY_OFFSET, b.length)
    case Row =>
      val r = value.asInstanceOf[InternalRow].asInstanceOf[UnsafeRow]
      set.idOfBytes(r.getBaseObject, r.getBaseOffset, r.getSizeInBytes)
  }
}
