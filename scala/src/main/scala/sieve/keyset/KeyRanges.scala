package sieve.keyset

import org.apache.spark.sql.catalyst.expressions.{And, Attribute, EqualTo, Expression, GreaterThanOrEqual, LessThanOrEqual, Literal, Or}

import sieve.membership._

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

  /** `key` within one of these ranges (none: FALSE), as a balanced OR that Parquet / ORC filters take. */
  def predicate(key: Attribute): Expression = {
    def lit(v: Long) = KeySet.literal(v, key.dataType)
    def one(lo: Long, hi: Long): Expression =
      if (lo == hi) EqualTo(key, lit(lo)) else And(GreaterThanOrEqual(key, lit(lo)), LessThanOrEqual(key, lit(hi)))
    def or(rs: Seq[(Long, Long)]): Expression =
      if (rs.size == 1) one(rs.head._1, rs.head._2) else { val (a, b) = rs.splitAt(rs.size / 2); Or(or(a), or(b)) }
    if (isEmpty) Literal(false) else or(bounds.toSeq)
  }
}

object KeyRanges {
  def single(lo: Long, hi: Long): KeyRanges = KeyRanges(Array((lo, hi)))

  /** The union of closed intervals, in any order: sorted, those that meet merged. */
  def union(intervals: Seq[(Long, Long)]): KeyRanges = {
    val out = scala.collection.mutable.ArrayBuffer.empty[(Long, Long)]
    intervals.sortBy(_._1).foreach { case (lo, hi) =>
      if (out.nonEmpty && lo <= out.last._2) out(out.size - 1) = (out.last._1, math.max(out.last._2, hi))
      else out += ((lo, hi))
    }
    KeyRanges(out.toArray)
  }

  def cover(keys: Array[Long], limit: Int): KeyRanges = {
    val sorted = keys.clone()
    java.util.Arrays.sort(sorted)
    coverRuns(run => {
      var i = 0
      while (i < sorted.length) {
        var j = i // the run of consecutive values (duplicates included) from sorted(i)
        while (j + 1 < sorted.length && (sorted(j + 1) == sorted(j) || sorted(j + 1) == sorted(j) + 1)) j += 1
        run(sorted(i), sorted(j))
        i = j + 1
      }
    }, limit)
  }

  /** The cover of the keys given as their maximal runs of consecutive values, in ascending order
   * (`foreachRun` calls its argument with each run's first and last key): only the `limit - 1` widest
   * gaps between runs are held, never the keys (a bitmap's keys may be hundreds of millions). */
  def coverRuns(foreachRun: ((Long, Long) => Unit) => Unit, limit: Int): KeyRanges = {
    require(limit >= 1, "limit must be at least 1")
    // a gap is (last key before it, first key after it); the difference of two ascending longs fits in
    // an unsigned long. A min-heap of the widest gaps seen.
    def width(g: (Long, Long)): Long = g._2 - g._1
    val heap = new java.util.PriorityQueue[(Long, Long)](limit,
      (x: (Long, Long), y: (Long, Long)) => java.lang.Long.compareUnsigned(width(x), width(y)))
    var (first, last, any) = (0L, 0L, false)
    foreachRun { (a, b) =>
      if (!any) { first = a; any = true }
      else if (limit > 1) {
        if (heap.size < limit - 1) heap.add((last, a))
        else if (java.lang.Long.compareUnsigned(a - last, width(heap.peek())) > 0) { heap.poll(); heap.add((last, a)) }
      }
      last = b
    }
    if (!any) return KeyRanges(Array.empty)
    val out = Array.newBuilder[(Long, Long)]
    var start = first
    heap.toArray(new Array[(Long, Long)](0)).sortBy(_._1).foreach { case (before, after) =>
      out += ((start, before))
      start = after
    }
    out += ((start, last))
    KeyRanges(out.result())
  }
}
