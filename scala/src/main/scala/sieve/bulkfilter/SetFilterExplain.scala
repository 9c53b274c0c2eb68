package sieve.bulkfilter

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

/** What `spark_sieve.explain` prints for each SetFilterExec of an executed plan that has run (figures of its last run). */
object SetFilterExplain extends AdaptiveSparkPlanHelper {
  def apply(plan: SparkPlan): Seq[String] =
    collectWithSubqueries(plan) { case f: SetFilterExec if f.hasRun => f }.map { f =>
      val m = f.metrics.map { case (k, v) => k -> v.value }
      (Seq(
        f.simpleString(25),
        s"  rows:       ${m("numOutputRows")} out",
        s"  sets:       ${m("setValues")} values, ${m("setBytes")} bytes, read in ${m("readTime")} ms, built in " +
          s"${m("buildTime")} ms") ++
        f.setsDescription.map("    " + _) ++
        f.measured.filterNot(_.isZero).map(s =>
          s"  settled:    ${TreeEvaluator.settled(f.condition.plan, s, f.labels)} (adaptive order, measured)").toSeq ++
        Seq(s"  scan:       ${m("filesSkipped")} files, ${m("rowGroupsSkipped")} row groups (${m("rowsSkipped")} rows) " +
          "skipped by footer statistics")).mkString("\n")
    }
}
