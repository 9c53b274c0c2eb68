package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

import sieve.membership.{KeyShape, LongSet}

/**
 * The creation side's keys, summarised within limits: their row count, min/max (long keys), and the
 * distinct keys themselves until there are more than `maxKeys` of them or they take more than
 * `maxBytes` — then only `overflowed` is left. Merged on executors, so no task and not the driver
 * ever holds more than the limits.
 */
final class KeySummary(shape: KeyShape, maxKeys: Long, maxBytes: Long) extends Serializable {
  var rows = 0L
  var min = Long.MaxValue
  var max = Long.MinValue
  var overflowed = false
  private var bytes = 0L
  private var longs = if (shape.asLong.isDefined) new LongSet() else null
  private var others = if (shape.asLong.isEmpty) new java.util.HashSet[UnsafeRow]() else null

  def distinct: Long = if (overflowed) -1L else if (longs != null) longs.size.toLong else others.size.toLong
  def longKeys: Option[LongSet] = Option(longs).filter(_ => !overflowed)
  def rowKeys: Option[java.util.HashSet[UnsafeRow]] = Option(others).filter(_ => !overflowed)

  /** Adds one key row (no NULL key: those never join). */
  def add(key: UnsafeRow): Unit = {
    rows += 1
    shape.asLong match {
      case Some(toLong) =>
        val v = toLong(key)
        if (v < min) min = v
        if (v > max) max = v
        if (!overflowed && longs.add(v)) { bytes += 8; checkLimits() }
      case None =>
        if (!overflowed && others.add(key.copy())) { bytes += key.getSizeInBytes + 16; checkLimits() }
    }
  }

  def merge(other: KeySummary): KeySummary = {
    rows += other.rows
    min = math.min(min, other.min)
    max = math.max(max, other.max)
    if (other.overflowed) overflow()
    if (!overflowed) {
      if (longs != null) other.longs.foreach { v => if (!overflowed && longs.add(v)) { bytes += 8; checkLimits() } }
      else other.others.forEach { r => if (!overflowed && others.add(r)) { bytes += r.getSizeInBytes + 16; checkLimits() } }
    }
    this
  }

  private def checkLimits(): Unit = if (distinct > maxKeys || bytes > maxBytes) overflow()

  private def overflow(): Unit = {
    overflowed = true
    longs = if (longs != null) new LongSet() else null
    others = if (others != null) new java.util.HashSet[UnsafeRow]() else null
  }
}
