package org.apache.spark.scheduler

import org.apache.spark.SparkContext

/**
 * The tasks running in an application now, as its task scheduler counts them (Spark-internal; this is the one
 * place spark-sieve reads it). The status tracker's count lags: the status store writes an executor's running
 * tasks at most every `spark.ui.liveUpdate.period` (100 ms) and only as the listener bus gets to each event, so
 * a task that ends soon after another starts may stay counted as running for as long as no other task starts.
 */
object SieveRunningTasks {
  def count(sc: SparkContext): Long = sc.taskScheduler match {
    case t: TaskSchedulerImpl => t.runningTasksByExecutors.values.map(_.toLong).sum
    case _ => sc.statusTracker.getExecutorInfos.map(_.numRunningTasks().toLong).sum
  }
}
