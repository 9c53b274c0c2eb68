package sieve.dynamicfilter

import sieve.keyset.{BitmapKeys, BloomKeys, EmptyKeySet, InSetKeys, KeySet}

/**
 * The order in which a task tests the several filters of one [[DynamicFilterExec]]: the one that drops
 * most rows first. A task starts with the filters whose key sets are empty, then the exact ones by key
 * count, then bloom filters; every `Resort` rows it re-sorts them by the pass rates their
 * [[RowKeyTest]]s measured in this task. One instance per task (a reference object of the generated code).
 */
final class KeyTestOrder(tests: Array[RowKeyTest]) extends Serializable {
  @transient private var current: Array[Int] = _
  @transient private var rows = 0L

  def order(): Array[Int] = {
    if (current == null) current = tests.indices.sortBy(i => KeyTestOrder.startRank(tests(i).keySet)).toArray
    rows += 1
    if (rows % KeyTestOrder.Resort == 0) current = current.sortBy(i => tests(i).passRate)
    current
  }
}

object KeyTestOrder {
  val Resort = 16384L

  private def startRank(keys: KeySet): (Int, Long) = keys match {
    case EmptyKeySet => (0, 0L)
    case k: InSetKeys => (1, k.size.toLong)
    case k: BitmapKeys => (1, k.keys)
    case k: BloomKeys => (2, k.keys)
    case _ => (3, 0L)
  }
}
