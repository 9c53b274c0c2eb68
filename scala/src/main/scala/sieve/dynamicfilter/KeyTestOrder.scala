package sieve.dynamicfilter

import sieve.keyset.{BitmapKeys, BloomKeys, EmptyKeySet, InSetKeys, PassThrough}

/**
 * The order in which a task tests the several filters of one [[DynamicFilterExec]]: the one that drops
 * most rows first. A task starts with the filters whose key sets are empty, then those the driver
 * expects to keep least of the scan's rows (from its footers, [[KeepEstimate]]), then the other exact
 * ones by key count, then bloom filters; every `Resort` rows it re-sorts them by the pass rates their
 * [[RowKeyTest]]s measured in this task. One instance per task (a reference object of the generated code).
 */
final class KeyTestOrder(tests: Array[RowKeyTest]) extends Serializable {
  @transient private var current: Array[Int] = _
  @transient private var rows = 0L

  def order(): Array[Int] = {
    if (current == null) current = tests.indices.sortBy(i => KeyTestOrder.startRank(tests(i))).toArray
    rows += 1
    if (rows % KeyTestOrder.Resort == 0) current = current.sortBy(i => tests(i).passRate)
    current
  }
}

object KeyTestOrder {
  val Resort = 16384L

  private def startRank(test: RowKeyTest): (Int, Double) = (test.keySet, test.expectedKeep) match {
    case (EmptyKeySet, _) => (0, 0.0)
    case (PassThrough, _) => (4, 0.0)
    case (_, Some(keep)) => (1, keep)
    case (k: InSetKeys, _) => (2, k.size.toDouble)
    case (k: BitmapKeys, _) => (2, k.distinct.toDouble)
    case (k: BloomKeys, _) => (3, k.keys.toDouble)
    case _ => (4, 0.0)
  }
}
