package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.exchange.Exchange

import sieve.scan.{KeyScanPushdown, PrunedScanBytes}

/**
 * Holds back, with [[AwaitBroadcastsExec]], each scan whose filter [[PlaceDynamicFilters]] declined until
 * DPP's keys are known ([[DynamicFilterBenefit]] check 5, tagged [[Awaits]]) and whose stage would start at
 * once: it waits for the broadcasts its DPP reads, so that AQE plans it again with those keys known and the
 * filter is sized by what DPP keeps. Not in exchanges with copies (the copies must stay equal); above a dynamic
 * filter on the scan (the filter reads the scan it sits on); not for broadcasts that hold dynamic filters or
 * awaiting scans themselves (no wait that could come back to this scan, no broadcast changed here after its
 * copy is taken).
 */
object AwaitPartitionPruning extends Rule[SparkPlan] {

  /** A scan whose filter waits for its dynamic partition pruning's keys (set by the placement's run). */
  val Awaits: TreeNodeTag[Unit] = TreeNodeTag[Unit]("sieve.dynamicFilter.awaitDpp")

  private def awaits(p: SparkPlan): Boolean = p.isInstanceOf[FileSourceScanExec] && p.getTagValue(Awaits).isDefined

  override def apply(plan: SparkPlan): SparkPlan =
    if (!PlaceDynamicFilters.active(plan) || !plan.exists(awaits)) plan
    else FilterPlans.during(plan) {
      val shared = FilterPlans.sharedExchanges(plan)
      // the broadcasts `s`'s DPP reads, when its stage would not wait for them, none of them holds a dynamic
      // filter or an awaiting scan
      def pending(s: FileSourceScanExec): Option[Seq[SparkPlan]] = PrunedScanBytes.pendingDpp(s, plan, FilterPlans.stageOf).collect {
        case p if !p.inItsStage && !p.broadcasts.exists(_.exists {
              case _: DynamicFilterExec => true
              case other => awaits(other)
            }) => p.broadcasts
      }
      def awaitingBroadcasts(p: SparkPlan, broadcasts: Seq[SparkPlan]): SparkPlan = {
        val a = AwaitBroadcastsExec(p, broadcasts)
        p.logicalLink.foreach(a.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, _))
        a
      }
      def await(p: SparkPlan): SparkPlan = p match {
        case e: Exchange if shared(e) => e
        case a: AwaitBroadcastsExec => a
        case f: DynamicFilterExec =>
          // a filter of some joins on a scan that awaits DPP's keys for the others': its creation sides may
          // have run (TPC-DS q72 partitioned, household_demographics' filter placed before DPP's date
          // broadcast was built), so the stage waits above the filter, which reads the scan it sits on
          val filtered = f.withNewChildren(f.child +: (f.creations.map(await) ++ f.bounds))
          KeyScanPushdown.scanBelow(f.child).filter(awaits).flatMap(pending)
            .fold(filtered)(awaitingBroadcasts(filtered, _))
        case s: FileSourceScanExec if awaits(s) => pending(s).fold[SparkPlan](s)(awaitingBroadcasts(s, _))
        case other => other.mapChildren(await)
      }
      val awaiting = await(plan)
      if (awaiting eq plan) plan
      else CreationRewire(awaiting).getOrElse {
        logWarning("spark-sieve: a scan awaiting partition pruning would wait for itself; it does not wait")
        plan
      }
    }
}
