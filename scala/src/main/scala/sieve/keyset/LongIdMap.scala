package sieve.keyset

/** An open-addressing map from long to a non-negative int (no boxing); `get` answers -1 when absent. */
final class LongIdMap(initialCapacity: Int = 64) extends Serializable {
  private var mask = Integer.highestOneBit(math.max(initialCapacity, 4) * 2 - 1) - 1
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
