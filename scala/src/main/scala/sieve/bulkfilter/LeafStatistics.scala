package sieve.bulkfilter

import sieve.config.SieveConf
import sieve.ordering._

/**
 * Estimates for the stats cost model. A key column's distinct count comes from Catalyst's column
 * statistics when the input has them (ANALYZE TABLE ... FOR COLUMNS), else from a bounded sample of
 * the input (`spark.sieve.bulkFilter.sampleRows` rows: one small job, once per BulkFilter). A leaf's
 * value count comes from its sources' row count when Catalyst knows it, else from their bytes over
 * the width of one value (a line of a text file: the key's average printed width, plus a newline).
 */
object LeafStatistics {

  def estimate(bf: BulkFilter): Seq[LeafEstimate] = {
    val input = InputStatistics(bf.child, bf.keys.distinct, SieveConf.BULK_FILTER_SAMPLE_ROWS.get(bf.conf).toInt)
    bf.keys.indices.map { leaf =>
      val key = bf.keys(leaf)
      val values = bf.sources(bf.leafSources(leaf)).stats.rowCount match {
        case Some(n) if bf.leafFiles(leaf).isEmpty => n.toDouble
        case _ => bf.leafBytes(leaf).toDouble / (input.width(key) + 1)
      }
      LeafEstimate(bf.leafIncludes(leaf), values, input.distinct(key), cost = 1.0 + values / input.rows)
    }
  }
}
