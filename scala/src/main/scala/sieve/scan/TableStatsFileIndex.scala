package sieve.scan

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}

import sieve.formats.TableFormats

/**
 * The listing of a table whose format skips files by its own per-file statistics (a Delta table's log,
 * [[sieve.formats.TableFormats]]) for the key filters of the dynamic filters on its scan, `groups` (one per
 * filter): the format decides, no footer is read. One listing, the scan's own data filters and every filter's key
 * ranges at once ([[TableStatsFileIndex.MaxRanges]] in all): each listing is a query over the table's log (a Spark
 * job, its filter compiled anew; Delta lists again for a scan with deletion vectors, whose data filters are not
 * the ones it prepared), and the format evaluates the filters in one generated expression over its log, which Java
 * caps at 64 KB a method (TPC-DS q13: five filters on one scan). What was skipped is counted against the files the
 * format prepared for the query ([[TableFormats.deltaPreparedFiles]]); where it prepared none, a listing without
 * the keys counts them.
 */
class TableStatsFileIndex(delegate: FileIndex, groups: Seq[TableStatsFileIndex.Group], source: String)
    extends DerivedFileIndex(delegate) with Logging {
  import TableStatsFileIndex._

  /** This listing with one more filter's key filters. */
  def and(group: Group): TableStatsFileIndex = new TableStatsFileIndex(delegate, groups :+ group, source)

  override def toString: String = s"$delegate, files skipped by $source for dynamic-filter keys"

  protected def list(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val keyed = groups.flatMap(_.keyFilters).toSet
    val own = dataFilters.filterNot(keyed.contains)
    // the filters whose keys this scan's copy holds (a copy of the scan may hold fewer)
    val live = groups.filter(_.keyFilters.exists(dataFilters.contains))
    if (live.isEmpty) return delegate.listFiles(partitionFilters, own)
    val start = System.nanoTime()
    val keys = live.flatMap(_.predicates(math.max(1, MaxRanges / live.size)))
    // (a listing the format fails: every file read, as without the filters)
    val kept = try Some(delegate.listFiles(partitionFilters, own ++ keys))
      catch { case NonFatal(e) =>
        logWarning(s"spark-sieve: $source could not skip files for dynamic-filter keys: $e"); None }
    val listed = kept.getOrElse(delegate.listFiles(partitionFilters, own))
    val after = listed.map(_.files.size.toLong).sum
    val before = if (kept.isEmpty) after
      else TableFormats.deltaPreparedFiles(delegate).filter(_ >= after)
        .getOrElse(delegate.listFiles(partitionFilters, own).map(_.files.size.toLong).sum)
    val elapsed = System.nanoTime() - start
    live.foreach { g =>
      g.counts.statsSource = if (live.size == 1) source else s"$source (one listing for ${live.size} filters)"
      g.counts.tableStatsFiles = before
      g.counts.filesSkipped = before - after
      g.counts.timeNs += elapsed
      g.counts.listNs += elapsed
      g.counts.report()
    }
    if (kept.isEmpty) listed else listed.filter(_.files.nonEmpty)
  }
}

object TableStatsFileIndex {
  /** A dynamic filter's part in the listing: the key filters pushed into the scan (`keyFilters`, by which the
   * scan's data filters are known to hold it), the same keys in at most n ranges (`predicates`), its counts. */
  final case class Group(keyFilters: Seq[Expression], predicates: Int => Seq[Expression],
      counts: KeyPrunedFileIndex.Counts)

  /** The most key ranges one listing holds, over all the filters on a scan. */
  val MaxRanges = 8
}
