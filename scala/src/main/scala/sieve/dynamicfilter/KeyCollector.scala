package sieve.dynamicfilter

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.expressions.{BindReferences, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.joins.SieveBroadcastKeys

/**
 * Reads the creation side's join keys from what the join itself computes — the broadcast relation
 * (on the driver, where it was built) or the shuffle output (a job over the shuffle files the join
 * will read again) — and chooses the filter: the exact set when the keys fit the limits, else a
 * bloom filter (a second pass over the same keys) with the range.
 */
object KeyCollector {
  final case class Limits(maxKeys: Long, maxKeyBytes: Long, maxBloomBytes: Long, fpp: Double)

  /** The filter, or None when the creation side's keys cannot be read (see [[SieveBroadcastKeys]]). */
  def collect(creation: SparkPlan, creationKeys: Seq[Expression], broadcast: Boolean, limits: Limits)
      : Option[KeyFilter] = {
    val shape = KeyShape(creationKeys.map(_.dataType))
    if (broadcast) {
      def keys() = SieveBroadcastKeys(creation, creationKeys).map(_.map(_.asInstanceOf[UnsafeRow]))
      keys().map { first =>
        val summary = new KeySummary(shape, limits.maxKeys, limits.maxKeyBytes)
        first.filterNot(_.anyNull).foreach(summary.add)
        choose(shape, summary, limits)({ expected =>
          val bloom = newBloom(expected, limits)
          keys().get.filterNot(_.anyNull).foreach(KeyFilterValues.put(bloom, shape, _))
          bloom
        }, { (lo, hi) =>
          val (bitmap, toLong) = (new LongBitmap(lo, hi), shape.asLong.get)
          keys().get.filterNot(_.anyNull).foreach(k => bitmap.add(toLong(k)))
          bitmap
        })
      }
    } else {
      val bound = BindReferences.bindReferences(creationKeys, creation.output)
      // a task per core, each reading several of the shuffle's partitions: tiny tasks cost more than
      // the keys they read, and treeReduce over few partitions needs no extra stage
      val shuffled = creation.execute()
      val cores = math.max(shuffled.sparkContext.defaultParallelism, 1)
      val input = if (shuffled.getNumPartitions > cores) shuffled.coalesce(cores) else shuffled
      val keyRows = input.mapPartitions { rows =>
        val project = UnsafeProjection.create(bound)
        rows.map(r => project(r): UnsafeRow).filterNot(_.anyNull)
      }
      runtimeRows(creation).filter(_ > limits.maxKeys) match {
        case Some(rows) =>
          // More rows than an IN-set may hold (AQE knows the stage's row count): one pass that also
          // fills a bloom filter sized for those rows, used when the distinct keys overflow the set.
          val (summary, bloom) = keyRows.mapPartitions { keys =>
            val (s, b) = (new KeySummary(shape, limits.maxKeys, limits.maxKeyBytes), newBloom(rows, limits))
            keys.foreach { k => s.add(k); KeyFilterValues.put(b, shape, k) }
            Iterator((s, b))
          }.treeReduce { case ((s1, b1), (s2, b2)) => (s1.merge(s2), b1.merge(b2)) }
          Some(choose(shape, summary, limits)(_ => bloom, bitmapPass(keyRows, shape)))
        case None =>
          val summary = keyRows.mapPartitions { keys =>
            val s = new KeySummary(shape, limits.maxKeys, limits.maxKeyBytes)
            keys.foreach(s.add)
            Iterator(s)
          }.treeReduce(_ merge _)
          Some(choose(shape, summary, limits)({ expected =>
            keyRows.mapPartitions { keys =>
              val b = newBloom(expected, limits)
              keys.foreach(KeyFilterValues.put(b, shape, _))
              Iterator(b)
            }.treeReduce(_ merge _)
          }, bitmapPass(keyRows, shape)))
      }
    }
  }

  /** The row count of a query stage that has run (AQE), when Spark knows it. */
  private def runtimeRows(plan: SparkPlan): Option[Long] = plan match {
    case stage: QueryStageExec => stage.getRuntimeStatistics.rowCount.map(_.toLong)
    case _ => None
  }

  /** Every bloom filter of one key set is created alike (from the same `expected`), so that they merge. */
  private def newBloom(expected: Long, limits: Limits): BlockedBloomFilter =
    BlockedBloomFilter.create(expected, limits.fpp, limits.maxBloomBytes * 8)

  private def bitmapPass(keyRows: RDD[UnsafeRow], shape: KeyShape)(lo: Long, hi: Long): LongBitmap = {
    val toLong = shape.asLong.get
    keyRows.mapPartitions { keys =>
      val b = new LongBitmap(lo, hi)
      keys.foreach(k => b.add(toLong(k)))
      Iterator(b)
    }.treeReduce(_ merge _)
  }

  /** The exact set when the keys fit the limits; else, for long keys dense in their range (at most
   * `BitmapBitsPerKey` values of the range per key row, and within `maxBloomBytes`), the bitmap
   * `bitmapOf(lo, hi)` — exact, and cheaper per row than a bloom filter; else the bloom filter
   * `bloomOf(key rows)`. */
  private def choose(shape: KeyShape, s: KeySummary, limits: Limits)(bloomOf: Long => BlockedBloomFilter,
      bitmapOf: (Long, Long) => LongBitmap): KeyFilter = {
    val range = if (shape.asLong.isDefined) KeyFilter.rangeOf(s) else None
    val maxBitmapBits = math.min(BitmapBitsPerKey * s.rows, limits.maxBloomBytes * 8)
    if (s.rows == 0) EmptyKeyFilter
    else if (!s.overflowed) new InSetFilter(shape, s.longKeys, s.rowKeys, range)
    else range.filter { case (lo, hi) => LongBitmap.fits(lo, hi, maxBitmapBits) } match {
      case Some((lo, hi)) => new BitmapKeyFilter(shape, bitmapOf(lo, hi), s.rows)
      case None => new BloomKeyFilter(shape, bloomOf(s.rows), range, s.rows)
    }
  }

  /** A bitmap is chosen over a bloom filter (~8 bits per key at 3% false positives) up to 32 bits per
   * key row: at most 4x its memory, for an exact test that is ~4x cheaper per row. */
  val BitmapBitsPerKey = 32L
}
