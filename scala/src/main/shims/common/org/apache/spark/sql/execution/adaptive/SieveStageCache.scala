package org.apache.spark.sql.execution.adaptive

import scala.collection.concurrent.TrieMap

import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{ColumnarToRowExec, InputAdapter, SparkPlan, SQLExecution, WholeStageCodegenExec}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

/**
 * The stages AQE made already in an execution, by what they compute: its stage cache, shared by the query and
 * its subqueries, from which AQE takes a stage in place of any exchange computing the same (the cache is
 * Spark-internal; this is the one place spark-sieve reads it). A cached table's plan runs its own AQE, with a
 * cache of its own: [[holds]] tells whose a plan is.
 */
final class SieveStageCache private (cache: TrieMap[SparkPlan, ExchangeQueryStageExec]) {
  private lazy val stages = cache.toSeq.map { case (canonical, stage) => (SieveStageCache.comparableOf(canonical, stage), stage) }

  /** The stage made for what `exchange` computes, if any. */
  def find(exchange: SparkPlan): Option[QueryStageExec] = {
    val wanted = SieveStageCache.comparable(exchange.canonicalized)
    stages.collectFirst { case (made, stage) if made == wanted => stage }
  }

  /** Whether `stage` (or a reuse of it), or the exchange a stage was made of, is one of this cache's. */
  def holds(plan: SparkPlan): Boolean = {
    val exchange = plan match {
      case s: QueryStageExec => s.plan match {
        case r: ReusedExchangeExec => r.child
        case p => p
      }
      case p => p
    }
    cache.values.exists(s => (s eq plan) || (s.plan eq exchange))
  }
}

object SieveStageCache {
  /**
   * Execution `executionId`'s stage cache as it is now, if that execution runs under AQE. Only while AQE runs
   * the execution's query: its executed plan, which holds the cache, is made then (asked while it is being
   * made, it would be made again, and again).
   */
  def of(executionId: String): Option[SieveStageCache] = for {
    qe <- Option(SQLExecution.getQueryExecution(executionId.toLong))
    aqe <- qe.executedPlan.collectFirst { case a: AdaptiveSparkPlanExec => a }
  } yield new SieveStageCache(aqe.context.stageCache)

  // (on the stage, with the key it was made of: a bound's wait reads the cache again every 100 ms)
  private val Comparable = TreeNodeTag[(SparkPlan, SparkPlan)]("sieve.stageCacheComparable")

  private def comparableOf(canonical: SparkPlan, stage: QueryStageExec): SparkPlan =
    stage.getTagValue(Comparable).collect { case (key, c) if key eq canonical => c }.getOrElse {
      val c = comparable(canonical)
      stage.setTagValue(Comparable, (canonical, c))
      c
    }

  // A stage is cached by its exchange as AQE optimized it for the stage (its codegen, columnar transitions,
  // shuffle reads), which an exchange still to be made a stage has not been through: compared without those.
  private def comparable(plan: SparkPlan): SparkPlan = plan.transformUp {
    case w: WholeStageCodegenExec => w.child
    case i: InputAdapter => i.child
    case c: ColumnarToRowExec => c.child
    case r: AQEShuffleReadExec => r.child
  }
}
