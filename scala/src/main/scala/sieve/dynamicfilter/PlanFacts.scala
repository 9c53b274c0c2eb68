package sieve.dynamicfilter

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression
import org.apache.spark.sql.execution.{FileSourceScanExec, InSubqueryExec, SparkPlan, SubqueryAdaptiveBroadcastExec}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.internal.SQLConf

import sieve.plan.Preconditions
import sieve.scan.PrunedScanBytes

/** What the dynamic-filter rules ask of the plan they run on, each found once per run: the exchanges with
 * copies, the tables DPP's build plans read, and what a scan reads once DPP has run where its keys are known
 * already. */
final class PlanFacts(plan: SparkPlan, conf: SQLConf) extends Logging {
  val shared: SparkPlan => Boolean = FilterPlans.sharedExchanges(plan)
  lazy val dppTables: Set[String] = FilterPlans.dppBuildTables(plan)

  private val kept = new java.util.IdentityHashMap[FileSourceScanExec, Option[PrunedScanBytes.Kept]]()
  // (an estimate: were it to fail, the plan goes on without it and the scan's start checks again)
  def keptByDpp(scan: FileSourceScanExec): Option[PrunedScanBytes.Kept] =
    kept.computeIfAbsent(scan, s => try PrunedScanBytes.whenBuilt(s, plan, FilterPlans.stageOf) catch {
      case NonFatal(e) => logWarning(s"spark-sieve: what DPP keeps of a scan could not be read at planning: $e"); None
    })

  private val pending = new java.util.IdentityHashMap[FileSourceScanExec, Option[PrunedScanBytes.PendingDpp]]()
  // (computed once for certain: a broadcast computed again for the wait would double its cost)
  def dppPending(scan: FileSourceScanExec): Option[PrunedScanBytes.PendingDpp] = pending.computeIfAbsent(scan, s =>
    PrunedScanBytes.pendingDpp(s, plan, FilterPlans.stageOf).filter(_.broadcasts.forall(Preconditions.sharedForCertain(_, conf))))

  /** Whether Spark's DPP prunes the partitions of `scan`, a V2 scan: a runtime filter that can drop some, unless
   * it is AQE's, still to be planned, kept only to reuse a broadcast join's build side, and the plan holds no
   * broadcast join (Spark then drops it: a sort-merge join of a table without statistics). */
  def dppPrunes(scan: BatchScanExec): Boolean = scan.runtimeFilters.exists {
    case DynamicPruningExpression(in: InSubqueryExec) => in.plan match {
      case a: SubqueryAdaptiveBroadcastExec if a.onlyInBroadcast => broadcastJoins
      case _ => true
    }
    case other => FilterPlans.prunes(other)
  }

  private lazy val broadcastJoins: Boolean = {
    def has(p: SparkPlan): Boolean = p match {
      case _: BroadcastHashJoinExec => true
      case s: QueryStageExec => has(s.plan)
      case _ => p.children.exists(has)
    }
    has(plan)
  }
}
