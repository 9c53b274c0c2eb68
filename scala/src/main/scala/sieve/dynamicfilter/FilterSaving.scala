package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.dynamicfilter.FilterPlans._
import sieve.scan.KeyScanPushdown

/** What each byte of `target`'s scan that a filter of `keys` drops saves, in reads of it ([[perByte]]):
 * its read where the keys can skip part of the scan (a single column pushed into it whose sampled footers do
 * not show its values spread over every row group), times the share of its rows in row groups the creation
 * side's footers rule out when they say ([[CreationKeyRanges]]: TPC-H q8); where each row would go into a
 * shuffle as it is (`beforeShuffle`), the shuffle's write, read and sort ([[FilterSaving.ShuffledRowCost]] - 1
 * more) — once when a filter of the scan's own keeps an unknown share of the rows — and as much for each row
 * that broadcast joins probing it make and send into a shuffle ([[ProbeFanout]], once their build sides have
 * run); as much where each row would go into an aggregate as it is (its hashing, and the shuffle of its
 * groups) — nothing when a filter of the scan's own comes first:
 * it may keep few of them, and the rest cost the aggregate less than a shuffle (TPC-H q17: lineitem grouped
 * by part, 6M rows, 2.3x faster filtered; q20: the same after the scan's filter on a year of dates keeps
 * 15%, 0.82x: the scan waited 0.45 s to save 0.15 s). A row dropped anywhere else (a join's probe) saves
 * little next to its read. */
private[dynamicfilter] final case class FilterSaving(target: SparkPlan, keys: Seq[Expression],
    source: KeyCollector.Source, route: KeyLineage.Route, collectOnly: Boolean) {
  import FilterSaving._
  private def conf: SQLConf = SQLConf.get
  private val scan = scanOf(target)
  private val beforeShuffle = route.shuffled && SieveConf.DYNAMIC_FILTER_BEFORE_SHUFFLE.get(conf)
  private val ownFilter = filteredOnItsOwn(target)
  /** The share of the scan its keys can skip (by rows), and why not all of it, if not. */
  private lazy val (read, readWhy): (Double, Option[String]) = keys match {
    case Seq(key: Attribute) =>
      val maxFiles = SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf)
      if (KeyScanPushdown.keysSpreadOverRowGroups(scan, key, maxFiles, conf))
        (0.0, Some(s"${key.name}'s values are spread over every row group (sampled footers), so its keys would skip none"))
      else source.read match {
        case Seq(creationKey: Attribute) =>
          CreationKeyRanges.skippableShare(source.creation, creationKey, scan, key, maxFiles, conf) match {
            case Some(share) if share <= 0 => (0.0, Some("its creation side's footers leave its keys in every " +
              s"row group of ${key.name} (sampled), so they would skip none"))
            case Some(share) if share < 1 => (share, Some(f"its creation side's footers leave its keys in the row " +
              f"groups of ${(1 - share) * 100}%.0f%% of its rows"))
            case _ => (1.0, None)
          }
        case _ => (1.0, None)
      }
    case _ => (0.0, Some("a key of several columns or an expression is not pushed into the scan"))
  }
  /** The rows the broadcast joins between the scan and a shuffle make of each row ([[ProbeFanout]]), when
   * their broadcasts have run; each of them goes into the shuffle as it is. */
  private val throughProbes =
    !route.shuffled && route.probesShuffled && SieveConf.DYNAMIC_FILTER_BEFORE_SHUFFLE.get(conf)
  private lazy val fanout: Option[Double] =
    if (!throughProbes) None
    else ProbeFanout(scan, route.probes, sampledFooterFiles(conf), conf)
  private def perShuffledRow: Int = if (ownFilter) 1 else ShuffledRowCost - 1
  private def shuffled: Double =
    if (beforeShuffle) perShuffledRow
    else if (fanout.isDefined) perShuffledRow * fanout.get
    else if (route.aggregated && !ownFilter) ShuffledRowCost - 1
    else 0
  private def counted0: Double = read + shuffled
  /** Once the creation side has run, its keys cost only the job that collects them, short next to a stage's
   * wait: a row dropped then pays back at least [[FilterSaving.MinRowSaving]] of its read in what the operators above it do
   * with it (a join's probe, a projection). */
  def perByte: Double = if (collectOnly) math.max(counted0, MinRowSaving) else counted0
  def why: String = readWhy.get + (
    if (throughProbes && fanout.isEmpty) " and the rows it drops reach a shuffle through " +
      "broadcast joins whose build sides have not run (the rows they make of each are not known yet)"
    else " and no row it drops would go into a shuffle or an aggregate as it is" +
      (if (route.aggregated) " (a filter of the scan's own comes first)" else ""))
  def counted: String =
    if (counted0 < perByte) s" (x$MinRowSaving: the least a row it drops saves above the scan, once its keys cost " +
      s"only their collection; ${readWhy.getOrElse("")})"
    else if (read == 1 && shuffled == 0) ""
    else Seq(if (read == 1) Some("its read") else if (read > 0) readWhy.map(w => f"x$read%.2f for its read: $w")
      else readWhy.map(w => s"not its read: $w"),
      if (shuffled == 0) None
      else if (fanout.isDefined) Some(f"x$shuffled%.2f for the shuffle of the ${fanout.get}%.2f rows the broadcast " +
        s"joins above the scan are expected to make of each row it drops (their build sides' rows and keys against " +
        s"its footers)${if (ownFilter) ", once: its own filter decides how many" else ""}")
      else if (!beforeShuffle) Some("x2 for the aggregate each row it drops would go into")
      else if (ownFilter) Some("once for the shuffle its rows go into, as its own filter decides how many")
      else Some("x2 for the shuffle each row it drops would go into"))
      .flatten.mkString(s" (x${if (perByte.isWhole) f"$perByte%.0f" else f"$perByte%.2f"}: ", "; ", ")")
}

object FilterSaving {
  /** What a scan row that reaches a shuffle as it is costs, in units of its scan: read, then written,
   * read back and sorted. */
  val ShuffledRowCost = 3

  /** What a row dropped saves at the least above its scan, in reads of it, where the wait for its keys is only
   * their collection ([[perByte]]): TPC-DS q95 (facts sorted by date), web_sales' 350,507 rows filtered
   * to 135 by the order numbers of a completed shuffle (7,560 bytes) before its self-join, 5.3x vanilla; TPC-H q8,
   * lineitem's 55 MB by 457,263 order keys of a 10.9 MB shuffle that keep 30% and skip no row group: 0.74x. */
  val MinRowSaving = 0.1
}
