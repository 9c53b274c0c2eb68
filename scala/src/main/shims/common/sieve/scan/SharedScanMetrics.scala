package sieve.scan

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec

/**
 * A file scan copied at run time (with the dynamic filter pushed into it) must report into the metrics
 * of the scan in the plan: the Spark UI and `explain` read those (files read, rows, scan time). The
 * metric maps are lazy vals of Spark's scan, so they are forced on both and the copy's set to the
 * original's by reflection; if Spark's fields ever change, the copy keeps its own metrics and a
 * warning says so (answers are not affected). Stands in for an API Spark lacks: a scan built over
 * another's metrics (`FileSourceScanLike`'s private `scanMetrics`, its `driverMetrics` and
 * `staticMetrics`, the same on every supported line; DynamicFilterSuite checks on each that the plan's scan
 * reports its copy's files and rows). A data source V2 scan's copy reading fewer input partitions likewise
 * (`metrics` and the source's `customMetrics`, lazy vals of `DataSourceV2ScanExecBase`).
 */
object SharedScanMetrics extends Logging {
  private val fields = Seq("org$apache$spark$sql$execution$FileSourceScanLike$$scanMetrics", "driverMetrics", "staticMetrics")

  private val v2Fields = Seq("customMetrics", "metrics")

  def apply(original: FileSourceScanExec, copy: FileSourceScanExec): FileSourceScanExec =
    share(classOf[FileSourceScanExec], fields, original, copy)

  def apply(original: BatchScanExec, copy: BatchScanExec): BatchScanExec =
    share(classOf[BatchScanExec], v2Fields, original, copy)

  private def share[T <: AnyRef](c: Class[T], names: Seq[String], original: T, copy: T): T = {
    try {
      names.foreach { name =>
        val accessor = c.getMethod(name)
        val field = c.getDeclaredField(name)
        field.setAccessible(true)
        val shared = accessor.invoke(original)
        accessor.invoke(copy)
        field.set(copy, shared)
      }
    } catch {
      case NonFatal(e) =>
        logWarning(s"spark-sieve: the filtered scan reports its metrics apart from the plan's scan ($e)")
    }
    copy
  }
}
