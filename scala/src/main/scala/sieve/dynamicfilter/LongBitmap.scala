package sieve.dynamicfilter

/** One bit per value of [lo, hi]: an exact set of dense long keys tested with one load and no hash.
 * Bitmaps over the same range merge. */
final class LongBitmap(val lo: Long, val hi: Long) extends Serializable {
  require(hi >= lo && hi - lo < LongBitmap.MaxBits, s"a bitmap over [$lo, $hi] is too large")
  private val bits = new Array[Long](((hi - lo) >>> 6).toInt + 1)

  def bytes: Long = bits.length * 8L

  def add(v: Long): Unit = { val o = v - lo; bits((o >>> 6).toInt) |= 1L << o }

  def contains(v: Long): Boolean =
    v >= lo && v <= hi && { val o = v - lo; (bits((o >>> 6).toInt) & (1L << o)) != 0 }

  def merge(other: LongBitmap): LongBitmap = {
    require(other.lo == lo && other.hi == hi, s"bitmaps over [$lo, $hi] and [${other.lo}, ${other.hi}]")
    var i = 0
    while (i < bits.length) { bits(i) |= other.bits(i); i += 1 }
    this
  }

  /** The keys, in ascending order. */
  def keys: Array[Long] = {
    val out = new Array[Long](bits.iterator.map(java.lang.Long.bitCount).sum)
    var i = 0
    var n = 0
    while (i < bits.length) {
      var word = bits(i)
      while (word != 0) {
        out(n) = lo + i * 64L + java.lang.Long.numberOfTrailingZeros(word)
        n += 1
        word &= word - 1
      }
      i += 1
    }
    out
  }
}

object LongBitmap {
  /** 2^31 bits (256 MB): the most an array of longs indexed by an Int holds comfortably. */
  val MaxBits: Long = 1L << 31

  /** Whether [lo, hi] spans fewer than `maxBits` values (false when hi - lo overflows). */
  def fits(lo: Long, hi: Long, maxBits: Long): Boolean = hi >= lo && hi - lo >= 0 && hi - lo < math.min(maxBits, MaxBits)
}
