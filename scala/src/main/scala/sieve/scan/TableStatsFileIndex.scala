package sieve.scan

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}

/**
 * The listing of a table whose format skips files by its own per-file statistics (a Delta table's log,
 * [[sieve.formats.TableFormats]]) for the key filters of the dynamic filters on its scan, `groups` (one per
 * filter, with the counts it reports): the format decides, no footer is read. The table lists its files as
 * the scan would (its own data filters: the listing the format prepared for the query), then once per group
 * with that group's filters alone; the files of the first that are in every other are read. Apart, not as one
 * listing under every filter: the format evaluates its filters in one generated expression over its log, and a
 * listing under filters it did not prepare recomputes the query's own (TPC-DS q13: five filters, 64 KB).
 */
class TableStatsFileIndex(delegate: FileIndex, groups: Seq[(Seq[Expression], KeyPrunedFileIndex.Counts)],
    source: String) extends DerivedFileIndex(delegate) with Logging {

  /** This listing with one more filter's key filters. */
  def and(keyFilters: Seq[Expression], counts: KeyPrunedFileIndex.Counts): TableStatsFileIndex =
    new TableStatsFileIndex(delegate, groups :+ (keyFilters -> counts), source)

  override def toString: String = s"$delegate, files skipped by $source for dynamic-filter keys"

  protected def list(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val keyed = groups.flatMap(_._1).toSet
    val all = delegate.listFiles(partitionFilters, dataFilters.filterNot(keyed.contains))
    val files = all.map(_.files.size.toLong).sum
    groups.foldLeft(all) { case (kept, (keyFilters, counts)) =>
      val keys = dataFilters.filter(keyFilters.contains)
      if (keys.isEmpty) kept
      else {
        val start = System.nanoTime()
        // (a listing the format fails: every file read, as without the filter)
        val mayHold = try Some(delegate.listFiles(partitionFilters, keys).flatMap(_.files.map(_.getPath)).toSet)
          catch { case NonFatal(e) =>
            logWarning(s"spark-sieve: $source could not skip files for dynamic-filter keys: $e"); None }
        counts.statsSource = source
        counts.tableStatsFiles = files
        counts.filesSkipped = mayHold.map(m => all.map(_.files.count(f => !m(f.getPath)).toLong).sum).getOrElse(0L)
        counts.timeNs += System.nanoTime() - start
        counts.report()
        mayHold.map(m => kept.map(d => d.copy(files = d.files.filter(f => m(f.getPath)))).filter(_.files.nonEmpty))
          .getOrElse(kept)
      }
    }
  }
}
