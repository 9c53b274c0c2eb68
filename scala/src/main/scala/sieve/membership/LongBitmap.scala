package sieve.membership

/** One bit per value of [lo, hi]: an exact set of dense long keys tested with one load and no hash.
 * Bitmaps over the same range merge. */
final class LongBitmap(val lo: Long, val hi: Long) extends Serializable {
  require(hi >= lo && hi - lo < LongBitmap.MaxBits, s"a bitmap over [$lo, $hi] is too large")
  private val bits = new Array[Long](((hi - lo) >>> 6).toInt + 1)

  def bytes: Long = bits.length * 8L

  def add(v: Long): Unit = LongBitmap.set(bits, v - lo)

  /** The number of values in the set. */
  def cardinality: Long = bits.foldLeft(0L)((n, w) => n + java.lang.Long.bitCount(w))

  def contains(v: Long): Boolean =
    v >= lo && v <= hi && { val o = v - lo; (bits((o >>> 6).toInt) & (1L << o)) != 0 }

  def merge(other: LongBitmap): LongBitmap = {
    require(other.lo == lo && other.hi == hi, s"bitmaps over [$lo, $hi] and [${other.lo}, ${other.hi}]")
    var i = 0
    while (i < bits.length) { bits(i) |= other.bits(i); i += 1 }
    this
  }

  /** Calls `f(first, last)` for each maximal run of consecutive keys, in ascending order. */
  def foreachRun(f: (Long, Long) => Unit): Unit = {
    var start = -1L // offset of the open run's first key; -1: none open
    var i = 0
    while (i < bits.length) {
      val (word, base) = (bits(i), i * 64L)
      if (word == -1L) { if (start < 0) start = base }
      else if (word == 0L) { if (start >= 0) { f(lo + start, lo + base - 1); start = -1 } }
      else {
        var b = 0
        while (b < 64) {
          val set = ((word >>> b) & 1L) != 0
          if (set && start < 0) start = base + b
          else if (!set && start >= 0) { f(lo + start, lo + base + b - 1); start = -1 }
          b += 1
        }
      }
      i += 1
    }
    // bits past hi are never set: a run open at the end ends at the last bit, which is hi
    if (start >= 0) f(lo + start, lo + bits.length * 64L - 1)
  }
}

object LongBitmap {
  /** Sets bit `o` of the bitmap held in `words`. */
  def set(words: Array[Long], o: Long): Unit = words((o >>> 6).toInt) |= 1L << o

  /** Calls `f` with the offset of each set bit of `words`, ascending. */
  def foreachSet(words: Array[Long])(f: Long => Unit): Unit = {
    var i = 0
    while (i < words.length) {
      var w = words(i)
      while (w != 0L) { f(i * 64L + java.lang.Long.numberOfTrailingZeros(w)); w &= w - 1 }
      i += 1
    }
  }

  /** 2^31 bits (256 MB): the most an array of longs indexed by an Int holds comfortably. */
  val MaxBits: Long = 1L << 31

  /** Whether [lo, hi] spans fewer than `maxBits` values (false when hi - lo overflows). */
  def fits(lo: Long, hi: Long, maxBits: Long): Boolean =
    hi >= lo && hi - lo >= 0 && hi - lo < math.min(maxBits, MaxBits)
}
