package sieve.bulkfilter

import org.apache.spark.sql.{SieveDatasets, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Limit, Project}

import sieve.config.SieveConf

/**
 * Estimates for the stats cost model. A key column's distinct count comes from Catalyst's column
 * statistics when the input has them (ANALYZE TABLE ... FOR COLUMNS), else from a bounded sample of
 * the input (`spark.sieve.bulkFilter.sampleRows` rows: one small job, once per BulkFilter). A leaf's
 * value count comes from its sources' row count when Catalyst knows it, else from their bytes over
 * the width of one value (a line of a text file: the key's average printed width, plus a newline).
 */
object LeafStatistics {

  def estimate(bf: BulkFilter): Seq[LeafEstimate] = {
    val keys = bf.keys.distinct
    val stats = bf.child.stats
    lazy val sample = sampleKeys(bf, keys)
    val rows = stats.rowCount.map(_.toDouble).getOrElse(math.max(1.0, sample.rowsEstimate))
    val distinct = keys.map { k =>
      k -> stats.attributeStats.get(k).flatMap(_.distinctCount).map(_.toDouble).getOrElse(sample.distinct(k, rows))
    }.toMap
    bf.keys.indices.map { leaf =>
      val key = bf.keys(leaf)
      val bytes = bf.leafBytes(leaf).toDouble
      val values = bf.sources(bf.leafSources(leaf)).stats.rowCount match {
        case Some(n) if bf.leafFiles(leaf).isEmpty => n.toDouble
        case _ => bytes / (sample.width(key) + 1)
      }
      LeafEstimate(bf.leafIncludes(leaf), values, distinct(key), cost = 1.0 + values / rows)
    }
  }

  private final case class Sample(size: Int, distincts: Map[Attribute, Int], widths: Map[Attribute, Double],
      inputBytes: Double) {
    /** Few distinct values in the sample: the column is low-cardinality; else scale to the input. */
    def distinct(k: Attribute, rows: Double): Double = {
      val d = distincts.getOrElse(k, 1).toDouble
      if (size == 0 || d < size / 2.0) math.max(d, 1.0) else math.min(rows, d * rows / size)
    }
    def width(k: Attribute): Double = widths.getOrElse(k, 8.0)
    def rowsEstimate: Double = if (size == 0) 1.0 else inputBytes / math.max(widths.values.sum, 1.0)
  }

  private def sampleKeys(bf: BulkFilter, keys: Seq[Attribute]): Sample = {
    val n = SieveConf.BULK_FILTER_SAMPLE_ROWS.get(bf.conf).toInt
    val plan = Limit(Literal(n), Project(keys, bf.child))
    val rows = SieveDatasets.ofRows(SparkSession.active, plan).collect()
    val columns = keys.indices.map(i => rows.iterator.map(r => Option(r.get(i)).map(_.toString).orNull).toSeq)
    Sample(
      rows.length,
      keys.zip(columns).map { case (k, vs) => k -> vs.filter(_ != null).distinct.size }.toMap,
      keys.zip(columns).map { case (k, vs) =>
        val present = vs.filter(_ != null)
        k -> (if (present.isEmpty) 8.0 else present.map(_.length).sum.toDouble / present.size)
      }.toMap,
      bf.child.stats.sizeInBytes.toDouble)
  }
}
