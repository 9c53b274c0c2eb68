package sieve.dynamicfilter

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * The per-row test a [[DynamicFilterExec]] task runs (called from generated code, or from its row
 * iterator). `filter` is set on the driver once the keys are known, before any task is sent.
 * After `Probe` rows, a task whose test kept more than `maxPass` of them stops testing.
 */
final class RowKeyTest(maxPass: Double, passThroughTasks: SQLMetric) extends Serializable {
  @volatile var filter: Broadcast[KeyFilter] = _

  @transient private var f: KeyFilter = _
  @transient private var seen = 0L
  @transient private var kept = 0L
  @transient private var passing = false

  def keepLong(v: Long): Boolean = passing || count(current.mightContainLong(v))

  def keepRow(key: UnsafeRow): Boolean = passing || count(current.mightContain(key))

  private def current: KeyFilter = {
    if (f == null) f = filter.value
    f
  }

  private def count(keep: Boolean): Boolean = {
    seen += 1
    if (keep) kept += 1
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
