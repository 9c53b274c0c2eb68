package sieve.membership

/** An open-addressing set of longs (no boxing): the exact IN-set of a single integral join key. */
final class LongSet(initialCapacity: Int = 64) extends Serializable {
  private var mask = Integer.highestOneBit(math.max(initialCapacity, 4) * 2 - 1) - 1
  private var slots = new Array[Long](mask + 1)
  private var used = new Array[Boolean](mask + 1)
  private var count = 0

  def size: Int = count

  def add(v: Long): Boolean = {
    var i = slot(v)
    while (used(i)) {
      if (slots(i) == v) return false
      i = (i + 1) & mask
    }
    used(i) = true
    slots(i) = v
    count += 1
    if (count * 2 > mask) grow()
    true
  }

  def contains(v: Long): Boolean = {
    var i = slot(v)
    while (used(i)) {
      if (slots(i) == v) return true
      i = (i + 1) & mask
    }
    false
  }

  def foreach(f: Long => Unit): Unit = {
    var i = 0
    while (i <= mask) { if (used(i)) f(slots(i)); i += 1 }
  }

  private def slot(v: Long): Int = {
    val h = v * 0x9E3779B97F4A7C15L // Fibonacci hashing: spreads sequential keys
    (h ^ (h >>> 32)).toInt & mask
  }

  private def grow(): Unit = {
    val (oldSlots, oldUsed) = (slots, used)
    mask = mask * 2 + 1
    slots = new Array[Long](mask + 1)
    used = new Array[Boolean](mask + 1)
    count = 0
    var i = 0
    while (i < oldSlots.length) { if (oldUsed(i)) add(oldSlots(i)); i += 1 }
  }
}
