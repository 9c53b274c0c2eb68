package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{BindReferences, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.joins.SieveBroadcastKeys
import org.apache.spark.util.sketch.BloomFilter

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
        choose(shape, summary, limits) { (expected, bits) =>
          val bloom = BloomFilter.create(expected, bits)
          keys().get.filterNot(_.anyNull).foreach(KeyFilterValues.put(bloom, shape, _))
          bloom
        }
      }
    } else {
      val bound = BindReferences.bindReferences(creationKeys, creation.output)
      val keyRows = creation.execute().mapPartitions { rows =>
        val project = UnsafeProjection.create(bound)
        rows.map(r => project(r): UnsafeRow).filterNot(_.anyNull)
      }
      runtimeRows(creation).filter(_ > limits.maxKeys) match {
        case Some(rows) =>
          // More rows than an IN-set may hold (AQE knows the stage's row count): one pass, straight
          // to the bloom filter, sized for those rows.
          val bits = bloomBits(rows, limits)
          val (summary, bloom) = keyRows.mapPartitions { keys =>
            val (s, b) = (new KeySummary(shape, 0L, 0L), BloomFilter.create(rows, bits))
            keys.foreach { k => s.add(k); KeyFilterValues.put(b, shape, k) }
            Iterator((s, b))
          }.treeReduce { case ((s1, b1), (s2, b2)) => (s1.merge(s2), b1.mergeInPlace(b2)) }
          Some(choose(shape, summary, limits)((_, _) => bloom))
        case None =>
          val summary = keyRows.mapPartitions { keys =>
            val s = new KeySummary(shape, limits.maxKeys, limits.maxKeyBytes)
            keys.foreach(s.add)
            Iterator(s)
          }.treeReduce(_ merge _)
          Some(choose(shape, summary, limits) { (expected, bits) =>
            keyRows.mapPartitions { keys =>
              val b = BloomFilter.create(expected, bits)
              keys.foreach(KeyFilterValues.put(b, shape, _))
              Iterator(b)
            }.treeReduce(_ mergeInPlace _)
          })
      }
    }
  }

  /** The row count of a query stage that has run (AQE), when Spark knows it. */
  private def runtimeRows(plan: SparkPlan): Option[Long] = plan match {
    case stage: QueryStageExec => stage.getRuntimeStatistics.rowCount.map(_.toLong)
    case _ => None
  }

  private def bloomBits(rows: Long, limits: Limits): Long =
    math.min(optimalBits(math.max(rows, 1L), limits.fpp), limits.maxBloomBytes * 8)

  /** Every bloom filter of one key set is created alike (`expected`, `bits`), so that they merge. */
  private def choose(shape: KeyShape, s: KeySummary, limits: Limits)(bloomOf: (Long, Long) => BloomFilter)
      : KeyFilter =
    if (s.rows == 0) EmptyKeyFilter
    else if (!s.overflowed) new InSetFilter(shape, s.longKeys, s.rowKeys, if (shape.asLong.isDefined) KeyFilter.rangeOf(s) else None)
    else {
      new BloomKeyFilter(shape, bloomOf(s.rows, bloomBits(s.rows, limits)), if (shape.asLong.isDefined) KeyFilter.rangeOf(s) else None, s.rows)
    }

  private def optimalBits(n: Long, p: Double): Long =
    math.max(64L, (-n * math.log(p) / (math.log(2) * math.log(2))).toLong)
}
