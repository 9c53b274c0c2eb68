package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.{ExistenceJoin, InnerLike, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.execution.exchange.{Exchange, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.joins.BaseJoinExec
import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.dynamicfilter.FilterPlans._
import sieve.plan.PlanMemo
import sieve.scan.{KeyPrunedFileIndex, KeyScanPushdown, PrunedScanBytes}

/** Whether a dynamic filter pays: [[DynamicFilterBenefit.Place]], or a decline with its reason. */
sealed trait Decision {
  /** This decision, or `next` when this one places the filter (the checks asked in order). */
  def orElse(next: => Decision): Decision = this match {
    case DynamicFilterBenefit.Place => next
    case declined => declined
  }
}

/**
 * Whether a dynamic filter pays, asked where it is placed ([[PlaceDynamicFilters]], [[SharedExchangeFilters]],
 * [[TrimWholeTableFilters]]) and again as its scan starts ([[DynamicFilterExec]]), from what is known then:
 *  1. what it can save against the wait for its keys ([[leastScanBytes]]): of each byte its scan reads (after
 *     column pruning; once DPP has run, of the files DPP keeps), the read where its keys can skip part of the
 *     scan, and a shuffle's or an aggregate's work where each row goes into one as it is ([[Saving]]), against
 *     the reading its creation side's scans leave idle before its keys are known and a stage's start (nothing
 *     when the scan's stage waits for it anyway, or it has run);
 *  2. not a key that is a partition column of the scan while DPP is on (DPP's job) — of a V2 scan, only
 *     when DPP did place a runtime filter on it (else the keys go to the source's own runtime filtering);
 *  3. a creation side that is filtered, or `minSizeRatio` times smaller than the scan, and, once its AQE
 *     stage has run, no larger than it;
 *  4. not pushed only, into a scan whose sampled footers show the key spread over every row group, or that is
 *     one row group while its footers do not give the key's statistics;
 *  5. decided once DPP's keys are known on a scan DPP prunes (its stage may wait for them);
 *  6. not a whole table whose keys would keep more than `maxPassRatio` of the scan's rows (footers);
 *  7. at run time: not a shuffle stage holding more key rows than are expected to reach the filter, and
 *     not keys expected to keep more than `maxPassRatio` of the scan's rows once counted.
 * The TPC-DS queries that taught each check are in bench/RESULTS.md. Under `spark.sieve.testing.placeEveryFilter`
 * every check places the filter ([[placeAll]]): what keeps answers is decided elsewhere ([[PlaceDynamicFilters]]).
 */
object DynamicFilterBenefit {
  case object Place extends Decision
  /** Not placed, for `reason`; `awaitDpp`: a scan whose stage should wait for its DPP's broadcast first, so
   * that the filter is decided again once DPP's keys are known ([[AwaitPartitionPruning]]). */
  final case class Decline(reason: String, awaitDpp: Option[FileSourceScanExec] = None) extends Decision

  private def conf: SQLConf = SQLConf.get

  private def maxPassRatio: Double = SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.get(conf)

  /** `decision`, or Place when every filter the preconditions allow is placed (the testing switch). */
  private def placeAll(decision: => Decision): Decision =
    if (SieveConf.placeEveryFilter(conf)) Place else decision

  /** What a scan row that reaches a shuffle as it is costs, in units of its scan: read, then written,
   * read back and sorted. */
  private val ShuffledRowCost = 3

  /** The bytes a scan must read for a filter to pay, and what they weigh ([[leastScanBytes]]). */
  // (the reason is text made only for a decline: a plan asks of every join at each of AQE's plans)
  final class Least(val bytes: BigInt, reason: => String) {
    lazy val why: String = reason
    /** The decline of a scan `name` reading `read` bytes (`when`: once DPP has run, ...), or None. */
    def declines(name: String, read: BigInt, when: String = ""): Option[Decline] =
      if (read >= bytes) None else Some(Decline(s"$name reads $read bytes$when$why"))
  }

  object Least {
    def apply(bytes: BigInt, why: => String): Least = new Least(bytes, why)
  }

  /** Whether a filter on `target` from `source` pays as it is placed: [[pays]], then whether it would skip
   * nothing ([[skipsNothing]]), last whether it waits for DPP's keys ([[beforeDpp]]: only of a filter every
   * other check lets through, as it may make the scan's stage wait). */
  def atPlacement(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source, route: KeyLineage.Route,
      facts: PlanFacts, probedInStage: Boolean): Decision = placeAll {
    pays(target, keys, source, route, facts, probedInStage).orElse(skipsNothing(target, keys, probedInStage))
      .orElse(beforeDpp(target, keys, source, route, facts, probedInStage))
  }

  /** Checks 2, 1 and 3 (and 1 again once DPP has run: [[smallAfterDpp]]). */
  def pays(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source, route: KeyLineage.Route,
      facts: PlanFacts, probedInStage: Boolean): Decision = placeAll {
    val creation = source.creation
    val scan = scanOf(target)
    val name = nameOf(scan)
    val partitionColumns = FilterPlans.partitionColumns(scan)
    val onPartitionColumn = keys.flatMap(_.references).exists(a => partitionColumns.exists(conf.resolver(_, a.name)))
    // check 2 first: it declines whatever check 1 says, without the scan's sizes and footers check 1 reads (174
    // of the joins of TPC-DS partitioned by date are DPP's own, asked again at each of AQE's plans)
    if (onPartitionColumn && conf.getConf(SQLConf.DYNAMIC_PARTITION_PRUNING_ENABLED) && dppFilters(scan, facts))
      Decline(s"$name: the key is a partition column (dynamic partition pruning's)")
    else {
      val bytes = scanBytes(scan)
      val least = leastScanBytes(target, keys, source, route, probedInStage)
      val ofColumns = columnBytes(scan)
      val kept = if (bytes < ofColumns) s" (of $ofColumns: the row groups its filters keep)" else ""
      least.declines(name, bytes, kept).getOrElse {
        smallAfterDpp(target, least, source, facts).orElse {
          val creationBytes = sizeOf(creation)
          // reading more keys than the scan has rows costs more than the rows it can drop; only a completed
          // stage's size says so (Spark's estimate of a join without CBO is far above its real size)
          if (materialized(creation) && creationBytes > bytes)
            Decline(s"the creation side ($creationBytes bytes, measured) is larger than $name ($bytes bytes)")
          else if (!hasSelectiveFilter(creation, target) &&
              BigDecimal(creationBytes) * SieveConf.DYNAMIC_FILTER_MIN_SIZE_RATIO.get(conf) > BigDecimal(bytes))
            Decline(s"the creation side is unfiltered and not minSizeRatio times smaller than $name's $bytes bytes")
          else Place
        }
      }
    }
  }

  /** Whether a key on a partition column of `scan` is left to DPP: a file scan's whenever DPP is on (measured on
   * TPC-DS partitioned by date, bench/RESULTS.md); a V2 scan's when Spark placed a runtime filter on it (none
   * when DPP did not pay, e.g. a sort-merge join with a table without statistics, where DPP keeps a filter only
   * to reuse a broadcast that is not there): else the keys go to the source's own runtime filtering. */
  private def dppFilters(scan: SparkPlan, facts: PlanFacts): Boolean = scan match {
    case s: BatchScanExec => facts.dppPrunes(s)
    case _ => true
  }

  /** The bytes `target`'s scan must read for a filter of `keys` over `route` from `source` to pay, as it is
   * placed: what the filter can save — each byte the scan reads, [[Saving.perByte]] times — must exceed the wait
   * for its keys ([[waitBytes]]; none when another filter of the plan waits for them already,
   * `source.awaited`, but then it must save something), and the scan read `minApplicationBytes` (a floor users
   * may set; 0 by default).
   * Nothing below a broadcast whose keys another filter reads (`route.feeding`: a filter there makes those keys
   * fewer). At run time the wait is over: only the floor is left ([[runTimeLeast]]), and what the keys keep
   * decides. */
  def leastScanBytes(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      route: KeyLineage.Route, probedInStage: Boolean): Least =
    if (route.feeding) Least(0, "")
    else {
      val floor = runTimeLeast(route)
      // keys another filter of the plan waits for already: their wait is paid, testing rows is not
      val wait = if (source.awaited) Wait(0, 0) else waitBytes(source, probedInStage, scanBytesPerRow(target, keys))
      val weighed = BigDecimal(wait.total) * SieveConf.DYNAMIC_FILTER_WAIT_WEIGHT.get(conf)
      if (weighed <= 0 && !source.awaited) floor
      else {
        val saving = Saving(target, keys, source, route, wait.collectOnly)
        val weight = if (weighed == BigDecimal(wait.total)) "" else " x waitWeight"
        def waited =
          if (source.awaited) "testing its rows (another filter of the plan waits for the same keys already)"
          else s"the ${wait.total} bytes$weight it would wait for its keys: ${wait.describe}"
        if (saving.perByte <= 0) Least(BigInt(Long.MaxValue), s": ${saving.why}, so nothing it saves outweighs $waited")
        else if (weighed <= 0) floor
        else {
          val least = (weighed / BigDecimal(saving.perByte)).setScale(0, BigDecimal.RoundingMode.CEILING).toBigInt
          if (least <= floor.bytes) floor else Least(least, s"${saving.counted}, less than $waited")
        }
      }
    }

  /** What the wait for `source`'s keys may cost, as it runs, before a filter placed on `target` stops waiting for
   * them ([[WaitBoundExec]]): what [[leastScanBytes]] weighs the wait against — each byte the scan reads,
   * [[Saving.perByte]] times, over `waitWeight` — less the stage's start, in bytes of reading. None when it waits
   * for nothing of its own (as [[leastScanBytes]] counts the wait) or the wait never declines (`waitWeight` 0). */
  def waitBudget(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source, route: KeyLineage.Route,
      probedInStage: Boolean): Option[BigInt] = {
    val weight = SieveConf.DYNAMIC_FILTER_WAIT_WEIGHT.get(conf)
    lazy val wait = waitBytes(source, probedInStage, scanBytesPerRow(target, keys))
    if (route.feeding || source.awaited || weight <= 0 || wait.read + wait.start <= 0 ||
        SieveConf.placeEveryFilter(conf)) None
    else {
      val saves = BigDecimal(scanBytes(scanOf(target))) * Saving(target, keys, source, route, collectOnly = false).perByte
      Some((saves / weight - BigDecimal(wait.start)).max(0).toBigInt)
    }
  }

  /** The floor a scan must read at run time (the wait for its keys over): `minApplicationBytes`. */
  def runTimeLeast(route: KeyLineage.Route): Least =
    floor(if (route.feeding || SieveConf.placeEveryFilter(conf)) 0L
      else SieveConf.DYNAMIC_FILTER_MIN_APPLICATION_BYTES.get(conf))

  /** The floor `bytes` (`minApplicationBytes`, or 0 where the scan's size does not decide). */
  def floor(bytes: Long): Least = Least(bytes, s", < minApplicationBytes ($bytes)")

  /** What each byte of `target`'s scan that a filter of `keys` drops saves, in reads of it ([[Saving.perByte]]):
   * its read where the keys can skip part of the scan (a single column pushed into it whose sampled footers do
   * not show its values spread over every row group), times the share of its rows in row groups the creation
   * side's footers rule out when they say ([[CreationKeyRanges]]: TPC-H q8); where each row would go into a
   * shuffle as it is (`beforeShuffle`), the shuffle's write, read and sort ([[ShuffledRowCost]] - 1 more) — once when a filter
   * of the scan's own keeps an unknown share of the rows — and as much for each row that broadcast joins probing
   * it make and send into a shuffle ([[ProbeFanout]], once their build sides have run); as much where each row would go into an aggregate as
   * it is (its hashing, and the shuffle of its groups) — nothing when a filter of the scan's own comes first:
   * it may keep few of them, and the rest cost the aggregate less than a shuffle (TPC-H q17: lineitem grouped
   * by part, 6M rows, 2.3x faster filtered; q20: the same after the scan's filter on a year of dates keeps
   * 15%, 0.82x: the scan waited 0.45 s to save 0.15 s). A row dropped anywhere else (a join's probe) saves
   * little next to its read. */
  private final case class Saving(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      route: KeyLineage.Route, collectOnly: Boolean) {
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
     * wait: a row dropped then pays back at least [[MinRowSaving]] of its read in what the operators above it do
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

  /** What a row dropped saves at the least above its scan, in reads of it, where the wait for its keys is only
   * their collection ([[Saving.perByte]]): TPC-DS q95 (facts sorted by date), web_sales' 350,507 rows filtered
   * to 135 by the order numbers of a completed shuffle (7,560 bytes) before its self-join, 5.3x vanilla; TPC-H q8,
   * lineitem's 55 MB by 457,263 order keys of a 10.9 MB shuffle that keep 30% and skip no row group: 0.74x. */
  private val MinRowSaving = 0.1

  /** What a scan waits for a creation side: `read`, the reading its cores leave idle while the creation side's
   * scans still run before its keys are known ([[idleBytes]]: a scan whose stage would run beside them loses only
   * the cores they leave it), and `start`, its stage's start (`stageStartBytes`) — nothing when the scan's stage
   * waits for it anyway (`probedInStage`: the broadcast join that reads it probes the scan's rows in that stage)
   * or it has run — and `collect`, the bytes of completed shuffle stages that a job reads for its keys (TPC-H q8:
   * orders' 457,263 keys, 0.5-0.8 s; a broadcast's keys are read from its relation on the driver). */
  final case class Wait(read: BigInt, start: Long, collect: BigInt = 0, reads: BigInt = 0, stages: Int = 1) {
    require(stages >= 1)
    def total: BigInt = read + start + collect
    def collectOnly: Boolean = collect > 0 && read == 0 && start == 0
    def describe: String =
      if (collect > 0) s"its keys are collected by a job over the $collect bytes of its completed shuffle stage(s)"
      else s"its creation side reads $reads bytes before they are known, leaving $read bytes of reading idle, " +
        s"+ stageStartBytes (${start / stages})" + (if (stages > 1) s" x $stages stages one after another" else "")
  }

  /** `perRow`: the bytes the target's scan reads per row, when its footers say. */
  def waitBytes(source: KeyCollector.Source, probedInStage: Boolean, perRow: => Option[Double]): Wait =
    source.creation match {
      case _ if probedInStage => Wait(0, 0)
      case c if materialized(c) => Wait(0, 0, if (source.broadcast) 0 else sizeOf(c))
      // keys computed from shuffle stages that have run ([[ComputedKeys]]): a job aggregates their rows again,
      // about what a scan pays for as many rows (a shuffle's bytes are not a Parquet scan's: TPC-H q18, orders'
      // 1.5M partial sums are 72 MB of shuffle, orders' scan 16 MB for as many rows)
      case ComputedKeys(c) if ComputedKeys.shuffles(c).forall(materialized) =>
        val stages = ComputedKeys.shuffles(c)
        val rows = stages.map(KeyCollector.shuffleRows)
        Wait(0, 0, perRow.filter(_ => rows.forall(_.isDefined))
          .map(b => BigDecimal(rows.flatten.sum) * b).map(_.toBigInt).getOrElse(stages.map(sizeOf).sum))
      case c =>
        val (scans, chain) = (toRead(c), math.max(stages(c), 1))
        Wait(scans.map(idleBytes).sum, SieveConf.DYNAMIC_FILTER_STAGE_START_BYTES.get(conf) * chain,
          reads = scans.map(scanBytes).sum, stages = chain)
    }

  /** The bytes of `target`'s scan's columns ([[columnBytes]]) per row of it, by its footers on the filter's key. */
  private def scanBytesPerRow(target: SparkPlan, keys: Seq[Expression]): Option[Double] = keys match {
    case Seq(key: Attribute) =>
      val scan = scanOf(target)
      val maxFiles = sampledFooterFiles(conf)
      for {
        groups <- KeyScanPushdown.plannedRowGroups(scan, key, maxFiles, conf)
        rows <- KeyScanPushdown.scanRows(scan, groups, maxFiles) if rows > 0
      } yield (BigDecimal(columnBytes(scan)) / rows).toDouble
    case _ => None
  }

  /** The scans in `plan` that AQE has not read already (a stage that has run: none). */
  private def toRead(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case s if materialized(s) => Nil
    case s: QueryStageExec => toRead(s.plan)
    case r: ReusedExchangeExec => toRead(r.child)
    case scan if targetable(scan) => Seq(scan)
    case other => other.children.flatMap(toRead)
  }

  /** The stages of `plan` that have not run, the most that run one after another (a stage waits for those it
   * reads): each one's start is waited for. */
  private def stages(plan: SparkPlan): Int = plan match {
    case s if materialized(s) => 0
    case s: QueryStageExec => stages(s.plan)
    case r: ReusedExchangeExec => stages(r.child)
    case e: Exchange => 1 + (e.children.map(stages) :+ 0).max
    case other => (other.children.map(stages) :+ 0).max
  }

  /** The reading a file scan's stage leaves idle on the cluster's cores while it runs: its files split as Spark
   * splits them (`FilePartition.maxSplitBytes`), each task reading its share of the scan's bytes, `cores` tasks
   * at a time; the cores the last wave, or a scan of fewer tasks than cores, leaves free idle for as long (a
   * scan of one small file: all but one). Another scan's stage waiting for it loses that, not the creation
   * side's read, which its cores would share anyway (TPC-DS q95: web_sales' self-join filtered by the orders
   * the outer query keeps, whose filtered scan of 92 MB keeps both cores busy). A scan of another kind: its
   * whole read (its tasks are not known here). */
  private def idleBytes(scan: SparkPlan): BigInt = idleBytesOf(scan)

  // (asked of a creation side's scans for each filter it would feed)
  private val idleBytesOf = new PlanMemo.Memo[SparkPlan, BigInt]({
    case s: FileSourceScanExec =>
      val read = scanBytes(s)
      val (tasks, cores) = (tasksOf(s), BigInt(parallelism(s)))
      val waves = (tasks + cores - 1) / cores
      (read * cores * waves / tasks - read).max(0)
    case other => scanBytes(other)
  })

  /** A file scan's tasks: its files split as Spark splits them (`FilePartition.maxSplitBytes`). */
  private def tasksOf(s: FileSourceScanExec): BigInt = {
    val files = BigInt(PrunedScanBytes.relationBytes(s.relation).max(1L))
    val cores = BigInt(parallelism(s))
    val split = BigInt(conf.filesMaxPartitionBytes).min(BigInt(conf.filesOpenCostInBytes).max((files + cores - 1) / cores))
    ((files + split - 1) / split).max(1)
  }

  /** The cores `scan`'s stage would keep busy: a file scan's tasks, at most the cluster's cores for a scan. */
  def coresOf(scan: SparkPlan): Int = scan match {
    case s: FileSourceScanExec => tasksOf(s).min(parallelism(s)).toInt
    case _ => math.max(1, conf.getConf(SQLConf.LEAF_NODE_DEFAULT_PARALLELISM).getOrElse(
      org.apache.spark.sql.SparkSession.getActiveSession.map(_.sparkContext.defaultParallelism).getOrElse(1)))
  }

  /** The tasks a file scan runs at once: Spark's minimum of partitions for a file scan (`FilePartition`). */
  private def parallelism(s: FileSourceScanExec): Int =
    math.max(1, conf.filesMinPartitionNum.getOrElse(
      conf.getConf(SQLConf.LEAF_NODE_DEFAULT_PARALLELISM).getOrElse(s.relation.sparkSession.sparkContext.defaultParallelism)))

  /** Check 1 once DPP has run: the scan reads at least `least` bytes of the files DPP keeps (`name`: the
   * scan, as the reason names it; `how`: where DPP's keys came from) — asked at placement once AQE has
   * computed DPP's broadcast, and by [[DynamicFilterExec]] as its scan starts. */
  def afterDpp(kept: PrunedScanBytes.Kept, least: Least, name: String, how: String = ""): Decision = placeAll {
    least.declines(name, kept.bytes, s" once dynamic partition pruning has run (${kept.files} of ${kept.ofFiles} files$how)")
      .getOrElse(Place)
  }

  /** Check 1 at placement, on a scan DPP prunes once DPP's keys are known (AQE has computed the broadcast it
   * reads them from) — asked before the filter makes the scan's stage wait for its creation side — and
   * whether the filter can be added to AQE's plan then ([[addsShuffle]]). */
  private def smallAfterDpp(target: SparkPlan, least: Least, source: KeyCollector.Source, facts: PlanFacts)
      : Decision = scanOf(target) match {
    case s: FileSourceScanExec =>
      if (least.bytes <= 0) Place
      else facts.keptByDpp(s).map(kept => afterDpp(kept, least, nameOf(s), ", by the keys of its completed broadcast")
        .orElse(addsShuffle(source))).getOrElse(Place)
    case _ => Place
  }

  /** Check 5, on a scan DPP prunes whose keys AQE has not computed (the broadcast DPP reads them from has not
   * run): decided at AQE's plan once it has ([[smallAfterDpp]]). The scan's stage then waits for that
   * broadcast, unless `awaitPartitionPruning` is off. A whole table's keys that would keep nearly every row
   * ([[keepsNearlyAll]]) decline it now instead: no wait for a filter dropped however much DPP keeps. */
  private def beforeDpp(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      route: KeyLineage.Route, facts: PlanFacts, probedInStage: Boolean): Decision = scanOf(target) match {
    case s: FileSourceScanExec if leastScanBytes(target, keys, source, route, probedInStage).bytes > 0 &&
        facts.keptByDpp(s).isEmpty =>
      facts.dppPending(s).map(p => keepsNearlyAll(target, keys, source).orElse {
        if (!p.inItsStage && !SieveConf.DYNAMIC_FILTER_AWAIT_PARTITION_PRUNING.get(conf)) Decline(s"${nameOf(s)}: its " +
          "dynamic partition pruning's broadcast is not built and its stage does not wait for it (awaitPartitionPruning=false)")
        else Decline(s"${nameOf(s)}: decided once the broadcast its dynamic partition pruning reads is built " +
          "(its stage waits for it)", if (p.inItsStage) None else Some(s))
      }).getOrElse(Place)
    case _ => Place
  }

  /** Why not, at AQE's plan once DPP's keys are known (a filter placed only now), when the filter's creation
   * side holds a shuffle that is not a stage yet: the filter would add a second copy of it to the plan, and AQE
   * adopts a new plan only if it holds no more shuffles than the one it runs (`SimpleCostEvaluator`). */
  private def addsShuffle(source: KeyCollector.Source): Decision =
    if (!source.creation.exists(_.isInstanceOf[ShuffleExchangeLike])) Place
    else Decline("its creation side holds a shuffle that is not an AQE stage yet once dynamic partition pruning's " +
      "keys are known (AQE would keep its plan, which has fewer shuffles)")

  /** Check 4: a filter that would only be pushed into the scan (its broadcast join probes each row in the
   * scan's stage and `sameStageRowTest` is off) on a key whose values the scan's sampled footers show spread
   * over every row group, or of a type whose statistics they do not give into a scan of one row group: pushed,
   * its keys would skip nothing, or not foreseeably. */
  private def skipsNothing(target: SparkPlan, keys: Seq[Expression], probedInStage: Boolean): Decision = {
    val scan = scanOf(target)
    val pushedOnly = probedInStage && !SieveConf.sameStageRowTest(conf)
    keys match {
      case Seq(key: Attribute) if pushedOnly &&
          KeyScanPushdown.keysSpreadOverRowGroups(scan, key, SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf), conf) =>
        Decline(s"${nameOf(scan)}: ${key.name}'s values are spread over every row group (sampled footers), so " +
          "its keys would skip none, and the broadcast join probes each row in this stage")
      // a key whose statistics the footers do not give (a string: TPC-DS q41's i_manufact) over one row group:
      // it is skipped only if no key lies in its range, while collecting and pushing the keys costs each query
      // (q41 at sf10: 0.35 s -> 0.40 s)
      case Seq(key: Attribute) if pushedOnly && !KeyPrunedFileIndex.supports(key.dataType) &&
          KeyScanPushdown.plannedRowGroupCount(scan, sampledFooterFiles(conf), conf).exists(_ <= 1) =>
        Decline(s"${nameOf(scan)} is one row group (footers), which keys of ${key.name} would skip only if none " +
          "lay in its range, and the broadcast join probes each row in this stage")
      case _ => Place
    }
  }

  /** Check 6, of a filter on `target` from an unfiltered `source` ([[wholeTableKeepsNearlyAll]]). */
  def keepsNearlyAll(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source): Decision = placeAll {
    if (hasSelectiveFilter(source.creation, target)) Place else wholeTableKeepsNearlyAll(scanOf(target), keys, source)
  }

  /** Check 6: the creation side (unfiltered) is a whole table read as it is, and its footers say its keys
   * would keep more than `maxPassRatio` of the scan's rows: as many keys as it has rows, over its key column's
   * range, against the scan's sampled footers ([[KeepEstimate]]). A dimension joined on its primary key for
   * its columns holds every key its fact does; a small table that holds a few of them keeps its filter. */
  private def wholeTableKeepsNearlyAll(scan: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source)
      : Decision = (keys, source.read) match {
    case (Seq(appKey: Attribute), Seq(creationKey: Attribute)) =>
      val maxFiles = SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf)
      (for {
        (computed, key) <- exchanged(source.creation, creationKey)
        table <- KeyScanPushdown.plannedRowGroups(computed, key, maxFiles, conf, whole = true)
        held = table.filter(_.hasValues) if held.nonEmpty
        groups <- KeyScanPushdown.plannedRowGroups(scan, appKey, sampledFooterFiles(conf), conf)
        (rows, lo, hi) = (held.map(_.rows).sum, held.map(_.min).min, held.map(_.max).max)
        keep <- KeepEstimate.of(rows.toDouble, lo, hi, groups)
      } yield keeps(keep, k => f"the creation side is a whole table whose $rows keys in [$lo, $hi] would keep " +
          f"${k * 100}%.0f%% of ${nameOf(scan)}'s rows (footers: the table's, the scan's sampled), more than maxPassRatio"))
        .getOrElse(Place)
    case _ => Place
  }

  /** Checks 6 and 7: keys expected to keep the share `keep` of the scan's rows pay only up to `maxPassRatio`
   * (`why`: the reason, given the share). */
  def keeps(keep: Double, why: Double => String): Decision =
    placeAll(if (keep > maxPassRatio) Decline(why(keep)) else Place)

  /** Check 7, at run time before a filter's keys are collected: its creation sides are shuffle stages holding
   * `creationRows` (AQE's count), more than are expected to reach it — the scan's `scanRows` (its footers)
   * times the shares `keptBefore` the filters built before it are expected to keep. A key row costs its
   * collection about what a row the filter could drop costs the stages above (a shuffle's, a join's). */
  def outnumbered(creationRows: Long, scanRows: Long, keptBefore: Seq[Double]): Decision = placeAll {
    val reach = keptBefore.foldLeft(scanRows.toDouble)(_ * _)
    if (creationRows <= reach) Place
    else {
      val before = if (keptBefore.isEmpty) "" else
        s" times the ${keptBefore.map(k => f"${k * 100}%.1f%%").mkString(", ")} the filters built before it are expected to keep"
      Decline(f"its creation side's $creationRows rows outnumber the ~${reach}%.0f expected to reach it (the scan's " +
        s"$scanRows rows in its footers$before): collecting its keys would cost more than the rows it could drop (not collected)")
    }
  }

  /** A filter in `plan` that can drop rows (not only NULL checks, which every join key gets), also inside
   * stages, a scan's partition filters (static, or DPP's) unless `target`'s scan is pruned by partition too
   * (its size here is its table's), and on the creation sides of its dynamic filters (one fed by a selective
   * side is selective) — but not those that filter `target` already: their keys' selectivity is there — nor
   * those below a join's side whose rows do not bound its output ([[narrowingSides]]). */
  private def hasSelectiveFilter(plan: SparkPlan, target: SparkPlan): Boolean = {
    val there = target match {
      case f: DynamicFilterExec => f.creations.map(CreationRewire.unfiltered).toSet
      case _ => Set.empty[CreationRewire.Unfiltered]
    }
    def selective(p: SparkPlan): Boolean = p match {
      case FilterExec(condition, child) => dropsMoreThanNulls(condition) || selective(child)
      case f: DynamicFilterExec =>
        selective(f.child) || f.creations.exists(c => !there.contains(CreationRewire.unfiltered(c)) && selective(c))
      case s: QueryStageExec => selective(s.plan)
      case r: ReusedExchangeExec => selective(r.child)
      case s: FileSourceScanExec => !prunedByPartition(scanOf(target)) && prunedByPartition(s)
      case j: BaseJoinExec => narrowingSides(j.joinType).exists(i => selective(j.children(i)))
      case other => other.children.exists(selective)
    }
    selective(plan)
  }

  /** The sides of a join (0 left, 1 right) whose filters make its output fewer rows. Not an anti join's right
   * side, whose filter keeps more of the left (TPC-H q16: partsupp's rows of suppliers without complaints, all
   * but a few, counted filtered by the complaints' filter, so part's scan waited for partsupp's keys, to keep
   * them all), an existence join's, nor an outer join's side it keeps rows of the other for. */
  private def narrowingSides(joinType: JoinType): Seq[Int] = joinType match {
    case _: InnerLike | LeftSemi => Seq(0, 1)
    case LeftOuter | LeftAnti | ExistenceJoin(_) => Seq(0)
    case RightOuter => Seq(1)
    case _ => Nil
  }
}
