package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.exchange.Exchange

import sieve.plan.PlanMemo
import sieve.scan.PrunedScanBytes

/**
 * Holds back, with [[AwaitBroadcastsExec]], each scan whose filter [[PlaceDynamicFilters]] declined until
 * DPP's keys are known ([[DynamicFilterBenefit]] check 5, tagged [[Awaits]]) and whose stage would start at
 * once: it waits for the broadcasts its DPP reads, so that AQE plans it again with those keys known and the
 * filter is sized by what DPP keeps. Not in exchanges with copies (the copies must stay equal), not below a
 * dynamic filter (its stage waits for that filter's creation sides already, and the filter reads the scan it
 * sits on), not for broadcasts that hold dynamic filters or awaiting scans themselves (no wait that could
 * come back to this scan, no broadcast changed here after its copy is taken).
 */
object AwaitPartitionPruning extends Rule[SparkPlan] {

  /** A scan whose filter waits for its dynamic partition pruning's keys (set by the placement's run). */
  val Awaits: TreeNodeTag[Unit] = TreeNodeTag[Unit]("sieve.dynamicFilter.awaitDpp")

  private def awaits(p: SparkPlan): Boolean = p.isInstanceOf[FileSourceScanExec] && p.getTagValue(Awaits).isDefined

  override def apply(plan: SparkPlan): SparkPlan =
    if (!PlaceDynamicFilters.active(plan) || !plan.exists(awaits)) plan
    else PlanMemo.during {
      val shared = FilterPlans.sharedExchanges(plan)
      def await(p: SparkPlan): SparkPlan = p match {
        case e: Exchange if shared(e) => e
        case a: AwaitBroadcastsExec => a
        case f: DynamicFilterExec => f.withNewChildren(f.child +: (f.creations.map(await) ++ f.bounds))
        case s: FileSourceScanExec if awaits(s) => PrunedScanBytes.pendingDpp(s, plan) match {
          case Some(pending) if !pending.inItsStage && !pending.broadcasts.exists(_.exists {
                case _: DynamicFilterExec => true
                case other => awaits(other)
              }) =>
            val awaiting = AwaitBroadcastsExec(s, pending.broadcasts)
            s.logicalLink.foreach(awaiting.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, _))
            awaiting
          case _ => s
        }
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
