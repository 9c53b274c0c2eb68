package sieve.scan

import scala.util.control.NonFatal

import org.apache.spark.sql.SieveV2Literals
import org.apache.spark.sql.catalyst.analysis.Resolver
import org.apache.spark.sql.connector.expressions.{Expression => V2Expression, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{InputPartition, Scan, SupportsRuntimeV2Filtering}
import org.apache.spark.sql.types.DataType

import sieve.formats.{IcebergBinding, TableFormats}
import sieve.keyset.{KeySet, KeyRanges}

/**
 * A data source V2 scan's own runtime filtering (`SupportsRuntimeV2Filtering`), handed a dynamic filter's keys as
 * Spark's DPP hands it its keys: `column IN (keys)` on the scan's filter attribute of that column, or, over more
 * than `inSize` keys, their least and greatest as `>=` and `<=`. The source drops the input partitions none of
 * whose rows can hold a key before any starts (partitions only: the rows of those kept are tested as before).
 */
object SourceRuntimeFiltering {
  /** The input partitions the source kept, and how many it had. */
  final case class Filtered(partitions: Seq[InputPartition], before: Int)

  /** The partitions `scan` keeps once filtered by `keys` on `column` (of `dataType`), its `partitions` before;
   * None when it filters none at run time by that column; Left: why it was not handed the keys (a binding not
   * proven, or the source failed to filter: its scan is then read as planned, not a new error in the query).
   * Filters `scan` itself, as Spark's DPP does: a scan is made for one query, and a filtered scan is only read
   * below the dynamic filter whose keys it holds. */
  def filter(scan: Scan, partitions: Seq[InputPartition], column: String, dataType: DataType, keys: KeySet,
      inSize: Long, resolver: Resolver): Option[Either[String, Filtered]] = scan match {
    case s: SupportsRuntimeV2Filtering =>
      s.filterAttributes.find(a => resolver(a.fieldNames.mkString("."), column)).flatMap { attribute =>
        predicates(attribute, dataType, keys, inSize).map { handed =>
          bound(scan, attribute).flatMap { _ =>
            try Right(Filtered({ s.filter(handed.toArray); s.toBatch.planInputPartitions().toSeq }, partitions.size))
            catch { case NonFatal(e) => Left(s"the source's runtime filtering failed (${e.getClass.getSimpleName})") }
          }
        }
      }
    case _ => None
  }

  /** Right where the source binds `attribute` to the column of that name the scan reads. Iceberg projects a runtime
   * filter onto its partitions by name, in a schema that may be another than the one the scan reads (an older
   * snapshot's: [[IcebergBinding]]): the name must bind to the same field in each. Any other source binds its own
   * filter attributes as its scan reads them (the contract Spark's DPP relies on). */
  private def bound(scan: Scan, attribute: NamedReference): Either[String, Unit] =
    if (!TableFormats.isIceberg(scan)) Right(())
    else IcebergBinding.unchanged(scan, attribute.fieldNames.mkString("."))

  /** The predicates on `attribute` that hold every key: IN over at most `inSize`, else the keys' one range. */
  private def predicates(attribute: NamedReference, dataType: DataType, keys: KeySet,
      inSize: Long): Option[Seq[Predicate]] =
    keys.inLiterals(dataType, inSize).map { values =>
      Seq(new Predicate("IN", (attribute +: values.map(SieveV2Literals.of)).toArray[V2Expression]))
    }.orElse(if (KeyPrunedFileIndex.supports(dataType)) keys.ranges(1).flatMap(range(attribute, dataType, _)) else None)

  private def range(attribute: NamedReference, dataType: DataType, ranges: KeyRanges): Option[Seq[Predicate]] =
    if (ranges.isEmpty) Some(Seq(new Predicate("IN", Array[V2Expression](attribute))))
    else {
      val (lo, hi) = (ranges.bounds.map(_._1).min, ranges.bounds.map(_._2).max)
      def bound(op: String, v: Long) =
        new Predicate(op, Array[V2Expression](attribute, SieveV2Literals.of(KeySet.literal(v, dataType))))
      Some(Seq(bound(">=", lo), bound("<=", hi)))
    }
}
