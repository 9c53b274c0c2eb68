package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Expression, In, Or}

import sieve.keyset.KeySet
import sieve.scan.KeyPrunedFileIndex

/** What became of one filter of a [[DynamicFilterExec]] as it executed: the key set it chose, why it was
 * dropped or not tested per row, the share of the scan's rows it is expected to keep, what it pushed into the
 * scan and what the footers skipped. */
final case class FilterOutcome(chosen: Option[KeySet] = None, dropped: Option[String] = None,
    untested: Option[String] = None, expected: Option[Double] = None, pushed: Seq[Expression] = Nil,
    pruning: Option[KeyPrunedFileIndex.Counts] = None) {

  /** As `spark_sieve.explain` prints it. */
  def describe: String = dropped match {
    case Some(why) => chosen.map(_.describe + "; ").getOrElse("") + s"dropped before the scan: $why"
    case None => chosen.map(_.describe).getOrElse("not executed yet") +
      untested.map("; not tested per row: " + _).getOrElse("") +
      expected.map(k => f"; expected to keep ${k * 100}%.1f%% of the scan's rows").getOrElse("") +
      (if (pushed.isEmpty) "" else s"; pushed to scan: ${pushed.map(brief).mkString(", ")}") +
      pruning.map(c =>
        if (c.pruningDeclined.nonEmpty) s"; no file pruned: ${c.pruningDeclined}"
        else if (c.footersNotRead > 0) s"; footers not read (${c.footersNotRead} files > maxFooterFiles)" +
          (if (c.footersSampled == 0) "" else s", ${c.footersSampled} sampled: " +
            (if (pushed.nonEmpty) "row groups to skip"
            else s"fewer than ${KeyPrunedFileIndex.MinSkippedRowsPerReader} rows a reader to skip, nothing pushed"))
        else if (c.runtimeFilteredPartitions > 0) s"; handed to the source's runtime filtering: " +
          s"${c.partitionsSkipped} of ${c.runtimeFilteredPartitions} input partitions skipped"
        else if (c.tableStatsFiles > 0) s"; statistics of ${c.tableStatsFiles} files read from ${c.statsSource} " +
          s"(no footer): ${c.filesSkipped} files skipped"
        else s"; footers of ${c.footersRead} files read: ${c.filesSkipped} files, ${c.rowGroupsSkipped} row groups " +
          s"(${c.rowsSkipped} rows) skipped").getOrElse("")
  }

  private def brief(e: Expression): String = e match {
    case In(v, list) if list.size > 10 => s"$v IN (${list.size} values)"
    case o: Or if o.collect { case r: Or => r }.size > 3 =>
      s"${o.references.head} in ${o.collect { case r: Or => r }.size + 1} ranges"
    case other => other.sql
  }
}
