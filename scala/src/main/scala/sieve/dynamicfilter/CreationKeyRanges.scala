package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf

import sieve.keyset.KeyRanges
import sieve.scan.{KeyPrunedFileIndex, KeyScanPushdown, RowGroupFilters}
import sieve.scan.KeyPrunedFileIndex.RowGroup

/**
 * Where a creation side's keys can lie, known from Parquet footers before anything runs: the key column's
 * range in each row group of the creation side's scan that the scan's own filters can keep (comparisons of
 * an integral or date column with literals, against that column's statistics in the same row group). A
 * filter of keys that lie all over the target scan's key range skips none of its row groups, however the
 * target is sorted: TPC-H q8's two years of orders, a table sorted by its key and filtered by a date that
 * has nothing to do with it, hold keys in every row group of lineitem (sorted by the same key): its filter
 * waited for them and skipped nothing (0.74x vanilla).
 */
object CreationKeyRanges {

  /** The share of the rows of `target`'s scan (its sampled footers on `targetKey`) in row groups that hold no
   * value the creation side's keys can take, or None when the footers cannot say: a creation side that is not
   * a Parquet scan (and its filters, projections), or one of whose kept row groups spans half of the target's
   * key range or more (a dimension in one row group: its filter keeps it whatever it holds, and says nothing of
   * where its keys lie). Each side's footers are those of a sample of its files beyond `SampleFiles` (32): the
   * creation side's other files can only add ranges, so a share of 0 holds for them too. */
  def skippableShare(creation: SparkPlan, creationKey: Attribute, target: SparkPlan, targetKey: Attribute,
      maxFiles: Long, conf: SQLConf): Option[Double] =
    for {
      targetGroups <- KeyScanPushdown.plannedRowGroups(target, targetKey, sampled(maxFiles), conf)
      held = targetGroups.filter(_.hasValues) if held.nonEmpty
      (computed, key) <- FilterPlans.exchanged(creation, creationKey)
      kept <- keptKeyGroups(computed, key, sampled(maxFiles), conf)
      whole = held.map(_.max).max.toDouble - held.map(_.min).min + 1
      if kept.forall(g => g.max.toDouble - g.min + 1 < whole / 2)
    } yield {
      val ranges = KeyRanges.union(kept.map(g => (g.min, g.max)))
      val rows = targetGroups.map(_.rows).sum.toDouble
      if (rows <= 0) 0.0
      else targetGroups.filterNot(g => g.hasValues && ranges.overlaps(g.min, g.max)).map(_.rows).sum / rows
    }

  private def sampled(maxFiles: Long): Long = math.min(maxFiles, KeyPrunedFileIndex.SampleFiles.toLong)

  /** The key column's row groups of the scan below `plan` (its footers, or a sample's) that hold a key (not all
   * NULL) and that every comparison of the scan's filters can keep ([[RowGroupFilters]]); None when a footer does not
   * say, or a filter is not such a comparison (nor a NULL check): a filter not understood may keep keys of a few row
   * groups only. */
  private def keptKeyGroups(plan: SparkPlan, key: Attribute, maxFiles: Long, conf: SQLConf): Option[Seq[RowGroup]] =
    for {
      scan <- KeyScanPushdown.scanBelow(plan, key)
      comparisons <- RowGroupFilters.sequence(RowGroupFilters.comparisons(scan))
      keyGroups <- KeyScanPushdown.plannedRowGroupsByFile(plan, key, maxFiles, conf)
      pass <- RowGroupFilters.passes(plan, comparisons, maxFiles, conf)
    } yield keyGroups.toSeq.flatMap { case (file, groups) =>
      groups.indices.filter(i => groups(i).hasValues && pass(file, i, groups.length)).map(groups)
    }
}
