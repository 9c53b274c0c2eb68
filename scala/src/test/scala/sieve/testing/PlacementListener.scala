package sieve.testing

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths, StandardOpenOption}

import org.apache.spark.sql.execution.{QueryExecution, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.util.QueryExecutionListener

import sieve.dynamicfilter.{EquiJoin, FilterPlans}

/**
 * Counts, for `dev/spark-suites`, the executed queries of every session of the JVM (registered through
 * `spark.sql.queryExecutionListeners`): one line per query appended to the file named by the system property
 * `sieve.placement.out` — whether its plan (AQE's final one, its stages and subqueries) holds an equi-join, a
 * dynamic filter, any spark-sieve operator, and why each join that got no filter got none.
 */
class PlacementListener extends QueryExecutionListener with AdaptiveSparkPlanHelper {
  private val out = Option(System.getProperty("sieve.placement.out")).map(Paths.get(_))

  override def onSuccess(funcName: String, qe: QueryExecution, durationNs: Long): Unit = out.foreach { path =>
    val plan = qe.executedPlan
    val nodes = collectWithSubqueries(plan) { case p: SparkPlan => p }
    val joins = nodes.flatMap(n => EquiJoin.unapply(n).map(_ => n))
    val filtered = nodes.exists(_.getClass.getName == "sieve.dynamicfilter.DynamicFilterExec")
    val ours = nodes.exists(_.getClass.getName.startsWith("sieve."))
    val reasons = joins.flatMap(_.getTagValue(FilterPlans.NoFilter)).map(_.replaceAll("[\\t\\n]", " ")).distinct
    val line = Seq(if (joins.nonEmpty) 1 else 0, if (filtered) 1 else 0, if (ours) 1 else 0).mkString("\t") +
      "\t" + reasons.mkString(" | ") + "\n"
    PlacementListener.synchronized {
      Files.write(path, line.getBytes(UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND)
    }
  }

  override def onFailure(funcName: String, qe: QueryExecution, exception: Exception): Unit = ()
}

object PlacementListener
