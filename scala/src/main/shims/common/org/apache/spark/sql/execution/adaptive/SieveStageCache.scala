package org.apache.spark.sql.execution.adaptive

import org.apache.spark.sql.execution.{ColumnarToRowExec, InputAdapter, SparkPlan, SQLExecution, WholeStageCodegenExec}

/**
 * The stages AQE made already in an execution, by what they compute: its stage cache, shared by the query and
 * its subqueries, from which AQE takes a stage in place of any exchange computing the same (the cache is
 * Spark-internal; this is the one place spark-sieve reads it).
 */
object SieveStageCache {
  /**
   * The lookup of execution `executionId`'s stage cache as it is now, if that execution runs under AQE. Only
   * while AQE runs the execution's query: its executed plan, which holds the cache, is made then (asked while
   * it is being made, it would be made again, and again).
   */
  def of(executionId: String): Option[SparkPlan => Option[QueryStageExec]] = for {
    qe <- Option(SQLExecution.getQueryExecution(executionId.toLong))
    aqe <- qe.executedPlan.collectFirst { case a: AdaptiveSparkPlanExec => a }
  } yield {
    val stages = aqe.context.stageCache.toSeq.map { case (canonical, stage) => (comparable(canonical), stage) }
    (exchange: SparkPlan) => {
      val wanted = comparable(exchange.canonicalized)
      stages.collectFirst { case (made, stage) if made == wanted => stage }
    }
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
