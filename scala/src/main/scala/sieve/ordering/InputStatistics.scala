package sieve.ordering

import org.apache.spark.sql.{SieveDatasets, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Limit, Project}
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.EstimationUtils

/** What is known of an input's size and its key columns: Catalyst's statistics first, a sample of
 * `sampleRows` rows (taken only when needed, and only when `sampleRows` > 0) for the rest. */
final class InputStatistics private (input: LogicalPlan, keys: Seq[Attribute], sampleRows: Int) {
  private val stats = input.stats
  private lazy val sample = Sample.of(input, keys, sampleRows)

  lazy val rows: Double = stats.rowCount.map(_.toDouble).getOrElse {
    if (sample.size > 0) math.max(1.0, stats.sizeInBytes.toDouble / math.max(sample.widths.sum, 1.0))
    else math.max(1.0, (stats.sizeInBytes / EstimationUtils.getSizePerRow(input.output)).toDouble)
  }

  def distinct(k: Attribute): Double =
    stats.attributeStats.get(k).flatMap(_.distinctCount).map(_.toDouble).getOrElse(sample.distinct(index(k), rows))

  /** The average printed width of a key's values (8 when unknown). */
  def width(k: Attribute): Double = sample.width(index(k))

  private def index(k: Attribute): Int = keys.indexWhere(_.exprId == k.exprId)
}

object InputStatistics {
  def apply(input: LogicalPlan, keys: Seq[Attribute], sampleRows: Int): InputStatistics =
    new InputStatistics(input, keys, sampleRows)
}

/** Per key (in the order asked for): distinct values seen and average printed width. */
private final case class Sample(size: Int, distincts: Seq[Int], widths: Seq[Double]) {
  /** Few distinct values in the sample: the column is low-cardinality; else scale to the input.
   * No sample: every row its own key, the estimate that never ranks a leaf too selective. */
  def distinct(i: Int, rows: Double): Double = {
    val d = distincts(i).toDouble
    if (size == 0) rows
    else if (d < size / 2.0) math.max(d, 1.0)
    else math.min(rows, d * rows / size)
  }
  def width(i: Int): Double = if (size == 0) 8.0 else widths(i)
}

private object Sample {
  // The optimizer meets the same input many times (fixed-point batches, copied nodes, explain):
  // one sample per input plan and key set, the most recent kept.
  private val cache = new java.util.LinkedHashMap[(LogicalPlan, Seq[Int], Int), Sample](64, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[(LogicalPlan, Seq[Int], Int), Sample]): Boolean =
      size() > 64
  }

  def of(input: LogicalPlan, keys: Seq[Attribute], n: Int): Sample = {
    if (n <= 0 || keys.isEmpty) return Sample(0, keys.map(_ => 0), keys.map(_ => 8.0))
    val key = (input.canonicalized, keys.map(k => input.output.indexWhere(_.exprId == k.exprId)), n)
    cache.synchronized(Option(cache.get(key))).getOrElse {
      val taken = take(input, keys, n)
      cache.synchronized(cache.put(key, taken))
      taken
    }
  }

  private def take(input: LogicalPlan, keys: Seq[Attribute], n: Int): Sample = {
    val rows = SieveDatasets.ofRows(SparkSession.active, Limit(Literal(n), Project(keys, input))).collect()
    val present = keys.indices.map(i => rows.iterator.map(_.get(i)).filter(_ != null).map(_.toString).toSeq)
    Sample(rows.length, present.map(_.distinct.size),
      present.map(vs => if (vs.isEmpty) 8.0 else vs.map(_.length).sum.toDouble / vs.size))
  }
}
