package sieve.dynamicfilter

import org.apache.spark.SparkContext
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/** A [[DynamicFilterExec]]'s metrics, in the Spark UI: the operator's rows and driver time, and each filter's own
 * (keys, rows tested and kept, what its scan skipped, its build and footer times). */
object DynamicFilterMetrics {
  /** The name of filter `i`'s metric `name`. */
  def name(name: String, i: Int): String = s"$name$i"

  private val perFilter = Seq(
    "numKeys" -> "keys collected", "inSetKeys" -> "in-set keys", "rowsTested" -> "rows tested",
    "rowsKept" -> "rows kept", "passThroughTasks" -> "pass-through tasks",
    "droppedBeforeScan" -> "dropped before the scan", "filesSkipped" -> "files skipped",
    "rowGroupsSkipped" -> "row groups skipped", "rowsSkipped" -> "rows skipped by the scan")

  def apply(sc: SparkContext, filterCount: Int): Map[String, SQLMetric] = Map(
    "numInputRows" -> SQLMetrics.createMetric(sc, "rows in"),
    "numOutputRows" -> SQLMetrics.createMetric(sc, "number of output rows"),
    "driverTime" -> SQLMetrics.createTimingMetric(sc, "driver time (keys, decisions, file pruning)")) ++
    (0 until filterCount).flatMap { i =>
      val n = if (filterCount > 1) s" (filter ${i + 1})" else ""
      perFilter.map { case (metric, text) => name(metric, i) -> SQLMetrics.createMetric(sc, text + n) } ++
        Seq(name("filterBytes", i) -> SQLMetrics.createSizeMetric(sc, s"bloom filter / bitmap size$n"),
          name("buildTime", i) -> SQLMetrics.createTimingMetric(sc, s"build time$n"),
          name("footerTime", i) -> SQLMetrics.createTimingMetric(sc, s"footer pruning time$n"))
    }
}
