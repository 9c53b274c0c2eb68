package sieve.dynamicfilter

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
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
    kept.computeIfAbsent(scan, s => try PrunedScanBytes.whenBuilt(s, plan) catch {
      case NonFatal(e) => logWarning(s"spark-sieve: what DPP keeps of a scan could not be read at planning: $e"); None
    })

  private val pending = new java.util.IdentityHashMap[FileSourceScanExec, Option[PrunedScanBytes.PendingDpp]]()
  // (computed once for certain: a broadcast computed again for the wait would double its cost)
  def dppPending(scan: FileSourceScanExec): Option[PrunedScanBytes.PendingDpp] = pending.computeIfAbsent(scan, s =>
    PrunedScanBytes.pendingDpp(s, plan).filter(_.broadcasts.forall(Preconditions.sharedForCertain(_, conf))))
}
