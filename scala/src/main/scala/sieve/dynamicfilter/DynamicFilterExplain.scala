package sieve.dynamicfilter

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

/** What `spark_sieve.explain` prints: each DynamicFilterExec of an executed plan with every filter on
 * its scan, then each equi-join that got no filter and why. */
object DynamicFilterExplain extends AdaptiveSparkPlanHelper {
  def apply(plan: SparkPlan): Seq[String] = filters(plan) ++ unfiltered(plan).toSeq

  private def filters(plan: SparkPlan): Seq[String] =
    collectWithSubqueries(plan) { case f: DynamicFilterExec => f }.map { f =>
      def m(name: String) = f.metrics(name).value
      def mi(name: String, i: Int) = f.metrics(f.metricName(name, i)).value
      val scan = f.child.collectLeaves().headOption.map(_.nodeName).getOrElse("?")
      (Seq(s"DynamicFilter on $scan: ${m("numInputRows")} rows in, ${m("numOutputRows")} out") ++
        (0 until f.filterCount).flatMap { i =>
          Seq(
            s"  ${i + 1}. ${f.describeFilter(i)}",
            s"     filter:  ${f.filterDescription(i)}",
            s"     rows:    ${mi("rowsTested", i)} tested, ${mi("rowsKept", i)} kept" +
              (if (mi("passThroughTasks", i) > 0) s" (${mi("passThroughTasks", i)} tasks passed the rest through)"
               else ""),
            s"     keys:    ${mi("numKeys", i)} collected in ${mi("buildTime", i)} ms" +
              (if (mi("filterBytes", i) > 0) s", filter of ${mi("filterBytes", i)} bytes" else ""),
            s"     scan:    ${mi("filesSkipped", i)} files, ${mi("rowGroupsSkipped", i)} row groups " +
              s"(${mi("rowsSkipped", i)} rows) skipped by footer statistics in ${mi("footerTime", i)} ms")
        }).mkString("\n")
    }

  private def unfiltered(plan: SparkPlan): Option[String] = {
    val joins = collectWithSubqueries(plan) { case p @ EquiJoin(j) if p.getTagValue(PlaceDynamicFilters.NoFilter).isDefined =>
      s"  ${p.nodeName} ${j.joinType} on ${j.leftKeys.mkString("[", ", ", "]")} = " +
        s"${j.rightKeys.mkString("[", ", ", "]")}: ${p.getTagValue(PlaceDynamicFilters.NoFilter).get}"
    }.distinct
    if (joins.isEmpty) None else Some(("joins without a dynamic filter:" +: joins).mkString("\n"))
  }
}
