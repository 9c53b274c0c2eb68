package sieve.membership

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types._

/**
 * How a key set holds its keys. A single integral key (byte to long, date, timestamp)
 * is a long: a [[LongSet]], a min/max range, `putLong` into a bloom filter. Any other key, composite
 * ones included, is its UnsafeRow: a hash set of rows, no range, its bytes into a bloom filter.
 */
final case class KeyShape(types: Seq[DataType]) {
  val asLong: Option[UnsafeRow => Long] = types match {
    case Seq(ByteType) => Some(_.getByte(0).toLong)
    case Seq(ShortType) => Some(_.getShort(0).toLong)
    case Seq(IntegerType | DateType) => Some(_.getInt(0).toLong)
    case Seq(LongType | TimestampType | TimestampNTZType) => Some(_.getLong(0))
    case _ => None
  }
}
