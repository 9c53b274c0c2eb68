package sieve.dynamicfilter

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

/** What `spark_sieve.explain` prints for each DynamicFilterExec of an executed plan. */
object DynamicFilterExplain extends AdaptiveSparkPlanHelper {
  def apply(plan: SparkPlan): Seq[String] =
    collectWithSubqueries(plan) { case f: DynamicFilterExec => f }.map { f =>
      val m = f.metrics.map { case (k, v) => k -> v.value }
      Seq(
        f.simpleString(25),
        s"  filter:  ${f.filterDescription}",
        s"  rows:    ${m("numInputRows")} in, ${m("numOutputRows")} out" +
          (if (m("passThroughTasks") > 0) s" (${m("passThroughTasks")} tasks passed the rest through)" else ""),
        s"  keys:    ${m("numKeys")} collected in ${m("buildTime")} ms" +
          (if (m("filterBytes") > 0) s", filter of ${m("filterBytes")} bytes" else ""),
        s"  scan:    ${m("filesSkipped")} files, ${m("rowGroupsSkipped")} row groups (${m("rowsSkipped")} rows) " +
          s"skipped by footer statistics in ${m("footerTime")} ms"
      ).mkString("\n")
    }
}
