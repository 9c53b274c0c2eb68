package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.{ExistenceJoin, InnerLike, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.joins.BaseJoinExec
import org.apache.spark.sql.internal.SQLConf

import sieve.config.{ConfigEntry, SieveConf}
import sieve.dynamicfilter.FilterPlans._
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
 *     scan, and a shuffle's or an aggregate's work where each row goes into one as it is ([[FilterSaving]]), against
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

  /** The bytes a scan must read for a filter to pay, and what they weigh ([[leastScanBytes]]); `placedWith`: given
   * the bytes a scan reads, the setting that would place its filter ([[ConfigEntry.wouldPlace]]), if one would. */
  // (the reason is text made only for a decline: a plan asks of every join at each of AQE's plans)
  final class Least(val bytes: BigInt, reason: => String, placedWith: BigInt => String) {
    lazy val why: String = reason
    /** The decline of a scan `name` reading `read` bytes (`when`: once DPP has run, ...), or None. */
    def declines(name: String, read: BigInt, when: String = ""): Option[Decline] =
      if (read >= bytes) None else Some(Decline(s"$name reads $read bytes$when$why${placedWith(read)}"))
  }

  object Least {
    def apply(bytes: BigInt, why: => String, placedWith: BigInt => String = _ => ""): Least =
      new Least(bytes, why, placedWith)
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
      Decline(s"$name: the key is a partition column (dynamic partition pruning's)" +
        ConfigEntry.wouldPlace(SQLConf.DYNAMIC_PARTITION_PRUNING_ENABLED.key, "= false"))
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
              BigDecimal(creationBytes) * SieveConf.DYNAMIC_FILTER_MIN_SIZE_RATIO.get(conf) > BigDecimal(bytes)) {
            // (the setting's least is 1: a creation side larger than the scan is placed by none)
            val ratio = if (creationBytes <= 0) None else Some(BigDecimal(bytes) / BigDecimal(creationBytes)).filter(_ >= 1)
            Decline(s"the creation side is unfiltered and not minSizeRatio times smaller than $name's $bytes bytes" +
              ratio.fold("")(r => SieveConf.DYNAMIC_FILTER_MIN_SIZE_RATIO.wouldPlace(
                s"<= ${r.setScale(2, BigDecimal.RoundingMode.FLOOR)}")))
          } else Place
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
   * placed: what the filter can save — each byte the scan reads, [[FilterSaving.perByte]] times — must exceed the wait
   * for its keys ([[KeyWait.waitBytes]]; none when another filter of the plan waits for them already,
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
      val wait =
        if (source.awaited) KeyWait.Wait(0, 0) else KeyWait.waitBytes(source, probedInStage, scanBytesPerRow(target, keys))
      val weighed = BigDecimal(wait.total) * SieveConf.DYNAMIC_FILTER_WAIT_WEIGHT.get(conf)
      if (weighed <= 0 && !source.awaited) floor
      else {
        val saving = FilterSaving(target, keys, source, route, wait.collectOnly)
        val weight = if (weighed == BigDecimal(wait.total)) "" else " x waitWeight"
        def waited =
          if (source.awaited) "testing its rows (another filter of the plan waits for the same keys already)"
          else s"the ${wait.total} bytes$weight it would wait for its keys: ${wait.describe}"
        val weightEntry = SieveConf.DYNAMIC_FILTER_WAIT_WEIGHT
        if (saving.perByte <= 0) Least(BigInt(Long.MaxValue), s": ${saving.why}, so nothing it saves outweighs $waited",
          _ => if (source.awaited) "" else weightEntry.wouldPlace("= 0"))
        else if (weighed <= 0) floor
        else {
          val least = (weighed / BigDecimal(saving.perByte)).setScale(0, BigDecimal.RoundingMode.CEILING).toBigInt
          // the weight at which `read` bytes' saving outweighs the wait (as much as `floor` allows)
          def placedWith(read: BigInt): String =
            if (read < floor.bytes || wait.total <= 0) ""
            else weightEntry.wouldPlace(
              s"<= ${(BigDecimal(read) * saving.perByte / BigDecimal(wait.total)).setScale(3, BigDecimal.RoundingMode.FLOOR)}")
          if (least <= floor.bytes) floor else Least(least, s"${saving.counted}, less than $waited", placedWith)
        }
      }
    }

  /** What the wait for `source`'s keys may cost, as it runs, before a filter placed on `target` stops waiting for
   * them ([[WaitBoundExec]]): what [[leastScanBytes]] weighs the wait against — each byte the scan reads,
   * [[FilterSaving.perByte]] times, over `waitWeight` — less the stage's start, in bytes of reading. None when it waits
   * for nothing of its own (as [[leastScanBytes]] counts the wait) or the wait never declines (`waitWeight` 0). */
  def waitBudget(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source, route: KeyLineage.Route,
      probedInStage: Boolean): Option[BigInt] = {
    val weight = SieveConf.DYNAMIC_FILTER_WAIT_WEIGHT.get(conf)
    lazy val wait = KeyWait.waitBytes(source, probedInStage, scanBytesPerRow(target, keys))
    if (route.feeding || source.awaited || weight <= 0 || wait.read + wait.start <= 0 ||
        SieveConf.placeEveryFilter(conf)) None
    else {
      val saves = BigDecimal(scanBytes(scanOf(target))) * FilterSaving(target, keys, source, route, collectOnly = false).perByte
      Some((saves / weight - BigDecimal(wait.start)).max(0).toBigInt)
    }
  }

  /** The floor a scan must read at run time (the wait for its keys over): `minApplicationBytes`. */
  def runTimeLeast(route: KeyLineage.Route): Least =
    floor(if (route.feeding || SieveConf.placeEveryFilter(conf)) 0L
      else SieveConf.DYNAMIC_FILTER_MIN_APPLICATION_BYTES.get(conf))

  /** The floor `bytes` (`minApplicationBytes`, or 0 where the scan's size does not decide). */
  def floor(bytes: Long): Least = Least(bytes, s", < minApplicationBytes ($bytes)",
    read => SieveConf.DYNAMIC_FILTER_MIN_APPLICATION_BYTES.wouldPlace(s"<= $read"))

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
          "dynamic partition pruning's broadcast is not built and its stage does not wait for it (awaitPartitionPruning=false)" +
          SieveConf.DYNAMIC_FILTER_AWAIT_PARTITION_PRUNING.wouldPlace("= true"))
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
          "its keys would skip none, and the broadcast join probes each row in this stage" +
          SieveConf.DYNAMIC_FILTER_SAME_STAGE_ROW_TEST.wouldPlace("= true"))
      // a key whose statistics the footers do not give (a string: TPC-DS q41's i_manufact) over one row group:
      // it is skipped only if no key lies in its range, while collecting and pushing the keys costs each query
      // (q41 at sf10: 0.35 s -> 0.40 s)
      case Seq(key: Attribute) if pushedOnly && !KeyPrunedFileIndex.supports(key.dataType) &&
          KeyScanPushdown.plannedRowGroupCount(scan, sampledFooterFiles(conf), conf).exists(_ <= 1) =>
        Decline(s"${nameOf(scan)} is one row group (footers), which keys of ${key.name} would skip only if none " +
          "lay in its range, and the broadcast join probes each row in this stage" +
          SieveConf.DYNAMIC_FILTER_SAME_STAGE_ROW_TEST.wouldPlace("= true"))
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
    placeAll(if (keep > maxPassRatio) Decline(why(keep) + SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.wouldPlace(
      s">= ${BigDecimal(keep).setScale(3, BigDecimal.RoundingMode.CEILING)}")) else Place)

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
