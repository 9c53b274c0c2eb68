package sieve.valueset

import sieve.keyset.{EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/** An open-addressing map from long to a non-negative int (no boxing); `get` answers -1 when absent.
 * Sized for `expected` entries at a load of at most one half. */
final class LongIdMap(expected: Int = 32) extends Serializable {
  private var mask = LongIdMap.slotsFor(expected) - 1
  private var keys = new Array[Long](mask + 1)
  private var ids = Array.fill(mask + 1)(-1)
  private var count = 0

  def size: Int = count
  def bytes: Long = keys.length * 12L

  def get(v: Long): Int = {
    var i = slot(v)
    while (ids(i) >= 0) {
      if (keys(i) == v) return ids(i)
      i = (i + 1) & mask
    }
    -1
  }

  /** Adds `v` with `id` unless present. */
  def putIfAbsent(v: Long, id: Int): Unit = {
    var i = slot(v)
    while (ids(i) >= 0) {
      if (keys(i) == v) return
      i = (i + 1) & mask
    }
    keys(i) = v
    ids(i) = id
    count += 1
    if (count * 2 > mask) grow()
  }

  /** Sets `v`'s id to `f(its id, or -1 when absent)`. */
  def update(v: Long, f: Int => Int): Unit = {
    var i = slot(v)
    while (ids(i) >= 0) {
      if (keys(i) == v) { ids(i) = f(ids(i)); return }
      i = (i + 1) & mask
    }
    keys(i) = v
    ids(i) = f(-1)
    count += 1
    if (count * 2 > mask) grow()
  }

  def foreach(f: (Long, Int) => Unit): Unit = {
    var i = 0
    while (i <= mask) { if (ids(i) >= 0) f(keys(i), ids(i)); i += 1 }
  }

  private def slot(v: Long): Int = (KeyHash.ofLong(v) >>> 32).toInt & mask

  private def grow(): Unit = {
    val (oldKeys, oldIds) = (keys, ids)
    mask = mask * 2 + 1
    keys = new Array[Long](mask + 1)
    ids = Array.fill(mask + 1)(-1)
    count = 0
    var i = 0
    while (i < oldKeys.length) { if (oldIds(i) >= 0) { val id = oldIds(i); update(oldKeys(i), _ => id) }; i += 1 }
  }
}

object LongIdMap {
  /** The power of two of slots that holds `expected` entries at a load of at most one half. */
  def slotsFor(expected: Int): Int = {
    val want = math.min(math.max(expected.toLong, 4L) * 2, 1L << 30).toInt
    Integer.highestOneBit(want - 1) << 1
  }
}
