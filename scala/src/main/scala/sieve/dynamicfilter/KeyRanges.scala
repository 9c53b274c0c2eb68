package sieve.dynamicfilter

/**
 * At most `limit` disjoint closed intervals, sorted, that cover every key of a set: the keys themselves
 * when there are few, else the runs left after cutting at the `limit - 1` widest gaps between sorted
 * keys. Pushed into the scan as an OR of ranges, it lets Parquet / ORC statistics skip the row groups
 * and pages that fall between clusters of keys (dates of one month in several years, say), which one
 * [min, max] range cannot.
 */
final case class KeyRanges(bounds: Array[(Long, Long)]) {
  def isEmpty: Boolean = bounds.isEmpty
  def size: Int = bounds.length

  /** Whether some interval meets [lo, hi] (a row group's or a file's min/max statistics). */
  def overlaps(lo: Long, hi: Long): Boolean = {
    // first interval whose upper bound is >= lo
    var (a, b) = (0, bounds.length)
    while (a < b) {
      val m = (a + b) >>> 1
      if (bounds(m)._2 < lo) a = m + 1 else b = m
    }
    a < bounds.length && bounds(a)._1 <= hi
  }
}

object KeyRanges {
  def single(lo: Long, hi: Long): KeyRanges = KeyRanges(Array((lo, hi)))

  def cover(keys: Array[Long], limit: Int): KeyRanges = {
    require(limit >= 1, "limit must be at least 1")
    if (keys.isEmpty) return KeyRanges(Array.empty)
    val sorted = keys.clone()
    java.util.Arrays.sort(sorted)
    if (sorted.length <= limit) return KeyRanges(sorted.map(k => (k, k)))
    // the (limit - 1) widest gaps (gap i lies between sorted(i) and sorted(i + 1); the difference of two
    // sorted longs fits in an unsigned long), kept in a min-heap of that size
    def gap(i: Int): Long = sorted(i + 1) - sorted(i)
    val heap = new java.util.PriorityQueue[Integer](limit, (x: Integer, y: Integer) =>
      java.lang.Long.compareUnsigned(gap(x), gap(y)))
    var i = 0
    while (i < sorted.length - 1) {
      if (java.lang.Long.compareUnsigned(gap(i), 1L) > 0) {
        if (heap.size < limit - 1) heap.add(i)
        else if (limit > 1 && java.lang.Long.compareUnsigned(gap(i), gap(heap.peek())) > 0) { heap.poll(); heap.add(i) }
      }
      i += 1
    }
    val cuts = heap.toArray(new Array[Integer](0)).map(_.intValue).sorted
    var start = sorted(0)
    val out = Array.newBuilder[(Long, Long)]
    cuts.foreach { i => out += ((start, sorted(i))); start = sorted(i + 1) }
    out += ((start, sorted(sorted.length - 1)))
    KeyRanges(out.result())
  }
}
