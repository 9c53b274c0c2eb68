package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.types.{ByteType, IntegerType, LongType, ShortType}

/** What `spark_sieve.explain` prints: each DynamicFilterExec of an executed plan with every filter on
 * its scan, then each equi-join that got no filter and why. */
object DynamicFilterExplain extends AdaptiveSparkPlanHelper {
  def apply(plan: SparkPlan): Seq[String] = filters(plan) ++ unfiltered(plan).toSeq

  /** Each filter operator once: one inside a broadcast is also a child of every filter reading that broadcast. */
  private def filters(plan: SparkPlan): Seq[String] = {
    val seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[DynamicFilterExec, java.lang.Boolean])
    collectWithSubqueries(plan) { case f: DynamicFilterExec => f }.filter(seen.add).map { f =>
      def m(name: String) = f.metrics(name).value
      def mi(name: String, i: Int) = f.metrics(f.metricName(name, i)).value
      val rows = if (f.passesRows) "not counted: no filter tested per row"
        else s"${m("numInputRows")} in, ${m("numOutputRows")} out"
      (Seq(f.simpleString(25), s"  rows:    $rows",
        s"  driver:  ${m("driverTime")} ms (keys, decisions, file pruning)") ++
        (0 until f.filterCount).flatMap { i =>
          (if (f.filterCount > 1) Seq(s"  -- filter ${i + 1}: ${f.describeFilter(i)}") else Nil) ++ Seq(
            s"  filter:  ${f.filterDescription(i)}",
            s"  tested:  ${mi("rowsTested", i)} rows, ${mi("rowsKept", i)} kept" +
              (if (mi("passThroughTasks", i) > 0) s" (${mi("passThroughTasks", i)} tasks passed the rest through)"
               else ""),
            s"  keys:    ${mi("numKeys", i)} collected, ${mi("buildTime", i)} ms on the driver" +
              (if (mi("filterBytes", i) > 0) s", filter of ${mi("filterBytes", i)} bytes" else ""),
            s"  scan:    ${mi("filesSkipped", i)} files, ${mi("rowGroupsSkipped", i)} row groups " +
              s"(${mi("rowsSkipped", i)} rows) skipped by file statistics (footers or the table's own: the filter line says which) in " +
              s"${mi("footerTime", i)} ms")
        }).mkString("\n")
    }
  }

  /** Each filter of an executed plan on one integral column, by the column's name, with the runs of the keys it
   * kept (lo, hi, lo, hi, ...), or none where they are not exact or number more than `limit` (the bench's oracle
   * writes them into the query by hand). */
  def keptRanges(plan: SparkPlan, limit: Int): Seq[(String, Option[Array[Long]])] = {
    val seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[DynamicFilterExec, java.lang.Boolean])
    collectWithSubqueries(plan) { case f: DynamicFilterExec => f }.filter(seen.add).flatMap { f =>
      (0 until f.filterCount).map(f.filterKeys).zipWithIndex.collect {
        case (Seq(a: Attribute), i) if Integral(a.dataType) =>
          val runs = f.keptKeys(i).filter(_.exact).flatMap(_.ranges(limit + 1)).filter(_.size <= limit)
          a.name -> runs.map(_.bounds.flatMap { case (lo, hi) => Array(lo, hi) })
      }
    }
  }

  private val Integral = Set[Any](ByteType, ShortType, IntegerType, LongType)

  /** How many filters sit below another join than the one whose keys they test (tests and benches ask). */
  def throughOtherJoins(plan: SparkPlan): Int =
    collectWithSubqueries(plan) { case EquiJoin(j) => j }.map { j =>
      val exchanges = (j.leftExchange ++ j.rightExchange).toSeq
      def count(p: SparkPlan, crossed: Boolean): Int = p match {
        case f: DynamicFilterExec =>
          if (crossed) f.creations.count(c => exchanges.exists(_.sameResult(c))) else 0
        case EquiJoin(_) => p.children.map(count(_, crossed = true)).sum
        case _ => p.children.map(count(_, crossed)).sum
      }
      count(j.left, crossed = false) + count(j.right, crossed = false)
    }.sum

  private def unfiltered(plan: SparkPlan): Option[String] = {
    val joins = collectWithSubqueries(plan) { case p @ EquiJoin(j) if p.getTagValue(FilterPlans.NoFilter).isDefined =>
      s"  ${p.nodeName} ${j.joinType} on ${j.leftKeys.mkString("[", ", ", "]")} = " +
        s"${j.rightKeys.mkString("[", ", ", "]")}: ${p.getTagValue(FilterPlans.NoFilter).get}"
    }.distinct
    if (joins.isEmpty) None else Some(("joins without a dynamic filter:" +: joins).mkString("\n"))
  }
}
