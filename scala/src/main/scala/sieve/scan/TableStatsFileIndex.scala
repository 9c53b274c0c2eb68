package sieve.scan

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}

/**
 * The listing of a table whose format skips files by its own per-file statistics (a Delta table's log,
 * [[sieve.formats.TableFormats]]) for the data filters it is listed with, `keyFilters` among them: the
 * format decides, no footer is read. Counts into `counts` the files the key filters skipped: those listed
 * without them and not with them.
 */
class TableStatsFileIndex(delegate: FileIndex, keyFilters: Seq[Expression], source: String,
    counts: KeyPrunedFileIndex.Counts) extends DerivedFileIndex(delegate) {

  override def toString: String = s"$delegate, files skipped by $source for dynamic-filter keys"

  protected def list(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val start = System.nanoTime()
    val kept = delegate.listFiles(partitionFilters, dataFilters)
    val all = delegate.listFiles(partitionFilters, dataFilters.filterNot(keyFilters.contains))
    val files = all.map(_.files.size.toLong).sum
    counts.statsSource = source
    counts.tableStatsFiles = files
    counts.filesSkipped = files - kept.map(_.files.size.toLong).sum
    counts.timeNs += System.nanoTime() - start
    counts.report()
    kept
  }
}
