package sieve.dynamicfilter

import sieve.keyset.{BitmapKeys, InSetKeys, KeySet}
import sieve.scan.KeyPrunedFileIndex.RowGroup

/**
 * The share of a scan's rows a single-column key set is expected to keep, from what is known once the
 * keys are collected and before the scan starts: how many keys there are and their range, against the
 * key column's statistics in each row group of the scan's Parquet footers. In a row group whose values
 * lie in [min, max], the keys that fall in that range (taken as spread evenly over their own range) over
 * the values it can hold, weighted by the group's rows; an all-NULL row group keeps nothing.
 * [[DynamicFilterExec]] drops a filter expected to keep more than `maxPassRatio` (a small dimension's
 * every key, say): testing each row would cost more than the few rows it drops, which the join drops anyway.
 */
object KeepEstimate {
  /** None when the keys do not say how many distinct ones or over which range (a bloom filter counts
   * key rows, which may repeat: it would overstate what it keeps). */
  def apply(keys: KeySet, groups: Seq[RowGroup]): Option[Double] =
    for {
      n <- distinctKeys(keys)
      (lo, hi) <- keys.range
      keep <- of(n, lo, hi, groups)
    } yield keep

  /** The share kept by `n` distinct keys in [lo, hi] (None when the groups hold no row). */
  def of(n: Double, lo: Long, hi: Long, groups: Seq[RowGroup]): Option[Double] = {
    val rows = groups.map(_.rows).sum
    if (rows <= 0) None
    else {
      val perValue = n / (hi.toDouble - lo + 1)
      Some(groups.map { g =>
        val overlap = math.min(hi, g.max).toDouble - math.max(lo, g.min) + 1
        if (!g.hasValues || overlap <= 0) 0.0
        else g.rows * math.min(1.0, perValue * overlap / (g.max.toDouble - g.min + 1))
      }.sum / rows)
    }
  }

  /** How many distinct keys there are, when the key set knows it and has a range: else there is no
   * estimate (and no footer to read for one). */
  def distinctKeys(keys: KeySet): Option[Double] = keys match {
    case k: InSetKeys if k.range.isDefined => Some(k.size.toDouble)
    case k: BitmapKeys => Some(k.distinct.toDouble)
    case _ => None
  }
}
