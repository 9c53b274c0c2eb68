package sieve.dynamicfilter

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric

import sieve.keyset._

/**
 * The key probe of a [[DynamicFilterExec]]'s [[KeySetContains]] (in its generated code, or its row
 * iterator). `filter` is set on the driver once the keys are known, before any task is sent.
 * After `Probe` rows, a task whose test kept more than `maxPass` of them stops testing (a PassThrough
 * filter, from the start). Counts the rows
 * it tests and keeps (in the task, for [[KeyTestOrder]], and as metrics).
 */
final class RowKeyTest(maxPass: Double, passThroughTasks: SQLMetric, rowsTested: SQLMetric, rowsKept: SQLMetric)
    extends KeyProbe {
  @volatile var filter: Broadcast[KeySet] = _
  /** The share of the scan's rows the driver expects the filter to keep ([[KeepEstimate]]), if known. */
  @volatile var expectedKeep: Option[Double] = None

  @transient private var f: KeySet = _
  @transient private var seen = 0L
  @transient private var kept = 0L
  @transient private var passing = false

  /** The share of the rows tested in this task that the test kept (1 before any, and once passing). */
  def passRate: Double = if (passing || seen == 0) 1.0 else kept.toDouble / seen

  /** The filter's kind and size, for the order of the first rows ([[KeyTestOrder]]). */
  def keySet: KeySet = current

  def containsLong(v: Long): Boolean = skip || count(current.mightContainLong(v))

  def containsRow(key: UnsafeRow): Boolean = skip || count(current.mightContain(key))

  // a filter dropped on the driver (PassThrough) is not tested, nor counted
  private def skip: Boolean = passing || (current eq PassThrough) && { passing = true; true }

  // a filter dropped or left to its joins gets no broadcast (its test is not generated); a test of one
  // anyway (code generated before the filters were built) passes every row, as a dropped filter does
  private def current: KeySet = {
    if (f == null) f = if (filter == null) PassThrough else filter.value
    f
  }

  private def count(keep: Boolean): Boolean = {
    seen += 1
    rowsTested.add(1)
    if (keep) { kept += 1; rowsKept.add(1) }
    if (seen == RowKeyTest.Probe && kept > maxPass * seen) {
      passing = true
      passThroughTasks += 1
    }
    keep
  }
}

object RowKeyTest {
  val Probe = 100000L
}
