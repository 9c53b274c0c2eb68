package sieve.config

import org.apache.spark.sql.internal.SQLConf

import sieve.errors.SieveConfigException

/** Every `spark.sieve.*` setting, declared once. The README's table is generated from this list. */
object SieveConf {
  val Prefix = "spark.sieve."

  val ENABLED: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.enabled", default = true,
    "Master switch. When false every spark-sieve rule leaves plans exactly as vanilla Spark makes them.")

  val BULK_FILTER_ENABLED: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.bulkFilter.enabled", default = true,
    "Reorder bulk-filter trees by cost. When false (or when spark.sieve.enabled is false) a tree " +
      "still runs, with its leaves in the order written.")

  val BULK_FILTER_COST_MODEL: ConfigEntry[String] = ConfigEntry.oneOf(
    "spark.sieve.bulkFilter.costModel", default = "seed", Seq("seed", "stats"),
    "How bulk-filter trees are ordered. seed: the seed's fixed costs (leaf 0.1, AND = product, " +
      "OR = 10 x sum). stats: selectivity of each leaf from its value count against the key column's " +
      "distinct count (Catalyst statistics, else a sample), AND by c/(1-s), OR by c/s.")

  val BULK_FILTER_SAMPLE_ROWS: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.bulkFilter.sampleRows", default = 10000L,
    "Rows of the input the stats cost model samples (one small job per bulk filter) to estimate " +
      "key columns' distinct counts when Catalyst has no column statistics.", min = 1L)

  val BULK_FILTER_BROADCAST_BYTES: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.bulkFilter.broadcastBytes", default = 256L << 20,
    "A key column's value table is broadcast when its sources hold at most this many bytes; larger " +
      "ones are joined as Spark chooses (usually by shuffling both sides).")

  val all: Seq[ConfigEntry[_]] = Seq(ENABLED, BULK_FILTER_ENABLED, BULK_FILTER_COST_MODEL,
    BULK_FILTER_SAMPLE_ROWS, BULK_FILTER_BROADCAST_BYTES)

  private val byKey = all.map(e => e.key -> e).toMap

  def enabled(conf: SQLConf): Boolean = ENABLED.get(conf)

  /**
   * Checks every `spark.sieve.*` key the session holds: an unknown key (a typo such as
   * `spark.sieve.enable`) or a bad value is an error naming it, instead of being ignored.
   */
  def validate(conf: SQLConf): Unit = {
    conf.getAllConfs.keys.filter(_.startsWith(Prefix)).toSeq.sorted.foreach { key =>
      byKey.get(key) match {
        case Some(entry) => entry.get(conf)
        case None => throw new SieveConfigException(key, unknownKeyMessage(key))
      }
    }
  }

  private def unknownKeyMessage(key: String): String = {
    val closest = all.map(_.key).minBy(k => editDistance(k, key))
    s"unknown spark-sieve setting (did you mean $closest? known settings: ${all.map(_.key).mkString(", ")})"
  }

  private def editDistance(a: String, b: String): Int = {
    val d = Array.tabulate(a.length + 1, b.length + 1)((i, j) => if (i == 0) j else if (j == 0) i else 0)
    for (i <- 1 to a.length; j <- 1 to b.length) {
      val cost = if (a(i - 1) == b(j - 1)) 0 else 1
      d(i)(j) = math.min(math.min(d(i - 1)(j) + 1, d(i)(j - 1) + 1), d(i - 1)(j - 1) + cost)
    }
    d(a.length)(b.length)
  }
}
