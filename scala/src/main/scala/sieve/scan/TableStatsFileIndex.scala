package sieve.scan

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.internal.SQLConf

import sieve.formats.{DeltaFileBounds, FileBounds, TableFormats}
import sieve.keyset.KeyRanges

/**
 * The listing of a table whose format keeps per-file statistics (a Delta table's log, [[sieve.formats.TableFormats]])
 * less the files whose bounds hold no key of the dynamic filters on its scan, `groups` (one per filter): no footer
 * is read. The scan's own listing (the files the format prepared for its own filters) is kept, and each file's
 * bounds on each filter's column ([[sieve.formats.DeltaFileBounds]], read once per table version) tested against
 * that filter's keys (up to [[sieve.formats.FileBounds.Ranges]] ranges): no listing of the log per query. Where
 * the bounds cannot be read, the format lists once under the scan's own filters and every filter's key ranges at
 * once ([[TableStatsFileIndex.MaxRanges]] in all: each such listing is a Spark job over the log, its filter
 * compiled anew, evaluated in one generated expression that Java caps at 64 KB a method: TPC-DS q13's five filters
 * on one scan); what was skipped is then counted against the files the format prepared for the query
 * ([[TableFormats.deltaPreparedFiles]]), or a listing without the keys where it prepared none.
 */
class TableStatsFileIndex(val delegate: FileIndex, groups: Seq[TableStatsFileIndex.Group], source: String)
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
    // (the time is what the filters add: not the scan's own listing under its own filters, which it lists
    // without them too; a listing for the keys and the count after it are theirs)
    val start = System.nanoTime()
    var ownListingNs = 0L
    val (listed, before) = DeltaFileBounds.of(delegate, live.map(_.column).distinct, SQLConf.get.resolver) match {
      case Right(bounds) =>
        val listStart = System.nanoTime()
        val scanned = delegate.listFiles(partitionFilters, own)
        ownListingNs = System.nanoTime() - listStart
        byBounds(scanned, live, bounds)
      case Left(why) =>
        logDebug(s"spark-sieve: $why; $source lists the files for the keys")
        byListing(partitionFilters, own, live)
    }
    val after = listed.map(_.files.size.toLong).sum
    val elapsed = System.nanoTime() - start - ownListingNs
    live.foreach { g =>
      g.counts.statsSource = if (live.size == 1) source else s"$source (one listing for ${live.size} filters)"
      g.counts.tableStatsFiles = before
      g.counts.filesSkipped = before - after
      g.counts.timeNs += elapsed
      g.counts.listNs += elapsed
      g.counts.report()
    }
    listed.filter(_.files.nonEmpty)
  }

  /** `listed` less the files whose bounds on a filter's column hold none of its keys, and the files listed. */
  private def byBounds(listed: Seq[PartitionDirectory], live: Seq[Group],
      bounds: Map[String, Map[String, FileBounds]]): (Seq[PartitionDirectory], Long) = {
    val tests = live.map(g => (bounds(g.column), g.ranges))
    def mayHold(path: String) = tests.forall { case (byPath, ranges) => byPath.get(path).forall(_.mayHold(ranges)) }
    (listed.map(dir => dir.copy(files = dir.files.filter(f => mayHold(f.getPath.toString)))),
      listed.map(_.files.size.toLong).sum)
  }

  /** The format's listing under the scan's own filters and the keys' ranges, and the files it prepared. */
  private def byListing(partitionFilters: Seq[Expression], own: Seq[Expression], live: Seq[Group])
      : (Seq[PartitionDirectory], Long) = {
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
    (listed, before)
  }
}

object TableStatsFileIndex {
  /** A dynamic filter's part in the listing: its key column (by the scan's name) and keys (`ranges`), the key
   * filters pushed into the scan (`keyFilters`, by which the scan's data filters are known to hold it), the same
   * keys in at most n ranges (`predicates`), its counts. */
  final case class Group(column: String, ranges: KeyRanges, keyFilters: Seq[Expression],
      predicates: Int => Seq[Expression], counts: KeyPrunedFileIndex.Counts)

  /** The most key ranges one listing of the format holds, over all the filters on a scan. */
  val MaxRanges = 8
}
