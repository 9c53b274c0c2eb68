package sieve.config

import org.apache.spark.sql.SieveSqlConf
import org.apache.spark.sql.internal.SQLConf

import sieve.errors.SieveConfigException

/** Every `spark.sieve.*` setting, declared once. README's and docs/tuning.md's tables are generated from this list. */
object SieveConf extends org.apache.spark.internal.Logging {
  val Prefix = "spark.sieve."

  val ENABLED: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.enabled", default = true,
    "Master switch. When false every spark-sieve rule leaves plans exactly as vanilla Spark makes them.")

  val BULK_FILTER_ENABLED: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.bulkFilter.enabled", default = true,
    "Reorder bulk-filter trees by cost. When false (or when spark.sieve.enabled is false) a tree " +
      "still runs, with its leaves in the order written.")

  val BULK_FILTER_COST_MODEL: ConfigEntry[String] = ConfigEntry.oneOf(
    "spark.sieve.bulkFilter.costModel", default = "stats", Seq("seed", "stats"),
    "How bulk-filter trees are ordered. stats: selectivity of each leaf from its value count against the " +
      "key column's distinct count (Catalyst statistics, else a sample of the input, one small job), AND by " +
      "c/(1-s), OR by c/s; the default (bench/bulk_filter: faster than seed on its small trees, either way on " +
      "the nested ones). seed: " +
      "the seed's fixed costs (leaf 0.1, AND = product, OR = 10 x sum), no sample.").asInternal

  val BULK_FILTER_SAMPLE_ROWS: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.bulkFilter.sampleRows", default = 10000L,
    "Rows of the input the stats cost model samples (one small job per bulk filter) to estimate " +
      "key columns' distinct counts when Catalyst has no column statistics.", min = 1L).asInternal

  val BULK_FILTER_BROADCAST_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.bulkFilter.broadcastBytes", default = 256L << 20,
    "A key column's value table is broadcast when its sources hold at most this many bytes; larger " +
      "ones are joined as Spark chooses (usually by shuffling both sides).")

  val BULK_FILTER_MAX_SET_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.bulkFilter.maxSetBytes", default = 128L << 20,
    "A key column's values are tested as an in-memory set (built once per query, broadcast, probed in " +
      "generated code) when its value sources hold at most this many bytes (file sizes, or Spark's " +
      "estimate of a DataFrame); a column above it keeps a join against its values. 0: always joins.")

  val BULK_FILTER_ADAPTIVE_ORDER: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.bulkFilter.adaptiveOrder", default = false,
    "Each task re-orders the AND/OR levels of a bulk filter tested against value sets as it measures them " +
      "(AND by cost / (1 - pass rate), OR by cost / pass rate, measured on 512 rows in 65,536), starting from the cost " +
      "model's order; generated code follows the current order. Off by default: bench/bulk_filter measures it " +
      "no faster than the cost model's fixed order yet. When false the order stays the cost model's.").asInternal

  val SUBQUERY_ORDER_ENABLED: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.subqueryOrder.enabled", default = true,
    "Order the AND/OR levels of ordinary filters made of IN (subquery) / EXISTS / NOT EXISTS predicates " +
      "with spark.sieve.subqueryOrder.costModel, as bulk filters are ordered (Spark joins them in written " +
      "order). A nondeterministic predicate, or one that can raise an error, never moves and nothing moves past it.")

  val SUBQUERY_ORDER_COST_MODEL: ConfigEntry[String] = ConfigEntry.oneOf(
    "spark.sieve.subqueryOrder.costModel", default = "seed", Seq("seed", "stats"),
    "The cost model that orders ordinary IN / EXISTS filters (as spark.sieve.bulkFilter.costModel). seed by " +
      "default: stats samples the filter's input (a small job) for every such query, which no bench here has " +
      "yet shown pays for ordinary SQL.").asInternal

  val DYNAMIC_FILTER_ENABLED: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.dynamicFilter.enabled", default = true,
    "Insert dynamic filters: at run time the join keys that survive the small side's filters prune the " +
      "big side's scan before it is read, shuffled or probed.")

  val DYNAMIC_FILTER_MIN_APPLICATION_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.dynamicFilter.minApplicationBytes", default = 0L,
    "A floor users may set: no join side reading fewer bytes (after column pruning, in the row groups its own " +
      "filters keep; once dynamic partition pruning has run, of the files it keeps) is filtered. 0 by default: " +
      "whether a filter pays is decided from the scan's bytes against the wait for its keys (stageStartBytes).").asInternal

  val DYNAMIC_FILTER_STAGE_START_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.dynamicFilter.stageStartBytes", default = 8L << 20,
    "What a scan loses by waiting for a creation side that has not run, besides the reading that side's scans " +
      "leave idle on the cores (a scan of fewer tasks than cores, or its last wave): " +
      "its stage's start, in bytes a scan reads meanwhile. A filter is placed only where what it can save " +
      "exceeds the wait for its keys: the scan's bytes where its keys can skip part of the scan, plus twice " +
      "them where each row it drops would also go into a shuffle, against nothing when the scan's stage waits " +
      "for the creation side anyway (a broadcast join probing its rows there) or that side has run (an AQE " +
      "stage), else the reading its scans leave idle plus this. At run time, with the keys known, a " +
      "filter expected to keep more than maxPassRatio of the rows is dropped.").asInternal

  val DYNAMIC_FILTER_WAIT_WEIGHT: ConfigEntry[Double] = ConfigEntry.double(
    "spark.sieve.dynamicFilter.waitWeight", default = 1.0,
    "The weight of the wait for a filter's keys against what the filter can save (stageStartBytes), and of a " +
      "scan's pruning where it needs a job (a Delta log's file statistics, once per table version: stageStartBytes) " +
      "against the scan's bytes: above 1, " +
      "fewer filters make a scan wait; 0, the wait never declines one (a filter wherever the other checks allow).",
    min = 0.0, max = 1e6).asInternal

  val DYNAMIC_FILTER_IDLE_CORE_SECOND_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.dynamicFilter.idleCoreSecondBytes", default = 4L << 20,
    "Under AQE, what a second of a core left idle by a scan's wait for its keys costs, in the bytes of reading " +
      "against which a filter's saving is weighed (its scan's bytes, up to three times: stageStartBytes). A scan's " +
      "stage waits for a creation side that has not run only until the idle core time of the cores it would use, " +
      "at this rate, exceeds what its filter saves less a stage's start; then AQE plans again without the filter " +
      "and the scan starts. On TPC-H sf1 here the filters that paid waited up to an idle core-second for each " +
      "4-8 MB they save (a core reads 50-60 MB of Parquet a second: what a dropped row saves above the scan, its " +
      "shuffle, sort and join, is counted low). Higher, waits end sooner; 1 B, a scan waits as long as its " +
      "creation side takes.", min = 1L).asInternal

  val DYNAMIC_FILTER_THROUGH_PRESERVED_SIDE: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.dynamicFilter.throughPreservedSide", default = true,
    "A join's keys that come from the preserved side of a left or right outer join below it (sales LEFT " +
      "JOIN returns, then joined to a date dimension) filter that side's scan too: a preserved row's output " +
      "rows all carry its key, so only rows the join above drops are dropped (Spark's runtime bloom filter " +
      "goes there as well; TPC-DS q80 at sf10: 6x faster). Never a full outer join's side, and an outer " +
      "join's own keys never filter its preserved side. false: keys stop at an outer join's preserved side.").asInternal

  val DYNAMIC_FILTER_BEFORE_SHUFFLE: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.dynamicFilter.beforeShuffle", default = true,
    "Each row a filter drops from a scan whose rows go into a shuffle as they are (no join or aggregate " +
      "between) counts twice its read more in what the filter saves (the shuffle's write, read and sort; " +
      "stageStartBytes): TPC-DS q93 at sf10, `reason` on store_returns, then store_returns' keys on " +
      "store_sales: 26.6 s -> 2.4 s; q95, web_sales' self-join, 31 MB read: 30.0 s -> 3.5 s. Once when the " +
      "scan has a filter of its own (it decides how many rows reach the shuffle). Rows that reach a shuffle through " +
      "broadcast joins count so for each row those joins are expected to make of them, once their build sides have " +
      "run (their rows and keys against the scan's footers): TPC-DS q95 at sf1, web_sales joined to itself by " +
      "broadcast. false: not counted.").asInternal

  val DYNAMIC_FILTER_KEYS_FROM_BROADCAST_BELOW: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.dynamicFilter.keysFromBroadcastBelow", default = true,
    "When a shuffled join's own keys give no filter (its creation side too large, or its filter would not " +
      "pay), its application side may still be filtered by the keys of a broadcast hash join below the " +
      "creation side's shuffle on the same key: every creation-side key is one of that broadcast's, so they " +
      "drop only rows the join drops, and they are known as soon as the broadcast is built (TPC-DS q75: " +
      "item's books filter catalog_returns, store_returns and web_returns before their shuffles).").asInternal

  val DYNAMIC_FILTER_MIN_SIZE_RATIO: ConfigEntry[Double] = ConfigEntry.double(
    "spark.sieve.dynamicFilter.minSizeRatio", default = 10.0,
    "When the creation side has no filter of its own, a dynamic filter is still inserted if the " +
      "application side is estimated at least this many times larger, unless the creation side is a whole " +
      "Parquet table whose footers say its keys would keep more than maxPassRatio of the scan's rows.",
    min = 1.0, max = 1e12).asInternal

  val DYNAMIC_FILTER_AWAIT_PARTITION_PRUNING: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.dynamicFilter.awaitPartitionPruning", default = true,
    "Under AQE, whether a partitioned scan that Spark's dynamic partition pruning prunes, and whose stage " +
      "would start before the broadcast DPP reads its keys from is built, waits for that broadcast so that " +
      "its dynamic filters are decided on the partitions DPP keeps. Off: such a scan gets no dynamic filter " +
      "(its stage starts as in plain Spark), and spark_sieve.explain says so.").asInternal

  val DYNAMIC_FILTER_SAME_STAGE_ROW_TEST: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.dynamicFilter.sameStageRowTest", default = false,
    "Whether a filter fed only by broadcast joins that probe the scan's rows in the scan's own stage (only " +
      "projections, filters, unions and other hash joins' probe sides between, none of whose keys is a row " +
      "that Spark cannot pack into one long: a row test spares such a probe) also tests each row. Off: its " +
      "keys are pushed into the scan (Parquet / ORC skip the row groups and files they rule out) but no row " +
      "is tested, since those joins drop the same rows in the same loop and a test per row only adds to " +
      "their probes (spark_sieve.explain says so); and where a sample of the scan's Parquet footers shows the " +
      "key's values spread over every row group, or the scan is one row group and its footers do not give " +
      "the key's statistics (a string), no filter is placed (its keys would skip nothing, or not foreseeably).").asInternal

  val DYNAMIC_FILTER_MAX_IN_SET_SIZE: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.dynamicFilter.maxInSetSize", default = 65536L,
    "Most distinct keys kept as an exact IN-set; with more, an integral key dense in its range (at " +
      "most 32 values of the range per key) gets an exact bitmap over that range, any other key a " +
      "bloom filter plus the keys' min/max range (it lets a few percent of non-matching rows through).",
    min = 1L).asInternal

  val DYNAMIC_FILTER_MAX_KEY_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.dynamicFilter.maxKeyBytes", default = 64L << 20,
    "Byte limit on the keys collected for an IN-set (on executors while merging, and on the driver); " +
      "above it the filter degrades to a bitmap or a bloom filter instead of holding more.", min = 1024L)

  val DYNAMIC_FILTER_MAX_BLOOM_BYTES: ConfigEntry[Long] = ConfigEntry.bytes(
    "spark.sieve.dynamicFilter.maxBloomBytes", default = 16L << 20,
    "Largest bloom filter or key bitmap built; a key set needing a larger bloom filter gets one of " +
      "this size (more false positives, never wrong answers), one needing a larger bitmap a bloom filter.",
    min = 1024L)

  val DYNAMIC_FILTER_BLOOM_FPP: ConfigEntry[Double] = ConfigEntry.double(
    "spark.sieve.dynamicFilter.bloomFpp", default = 0.03,
    "Target false-positive rate of bloom filters.", min = 1e-6, max = 0.5).asInternal

  val DYNAMIC_FILTER_MAX_PASS_RATIO: ConfigEntry[Double] = ConfigEntry.double(
    "spark.sieve.dynamicFilter.maxPassRatio", default = 0.9,
    "A filter expected to keep more than this fraction of a Parquet scan's rows (its keys against the " +
      "key column's values in the scan's footers) is dropped before the scan starts, and a task that sees " +
      "its filter keep more than this fraction of its first rows stops filtering (pass-through): the join " +
      "drops the same rows anyway.", min = 0.0, max = 1.0).asInternal

  val DYNAMIC_FILTER_PUSHDOWN_IN_SIZE: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.dynamicFilter.pushdownInSetSize", default = 1000L,
    "IN-sets up to this many keys are pushed into Parquet/ORC scans (and handed to a data source V2 scan's own " +
      "runtime filtering) as IN; larger ones push only their min/max range.", min = 0L).asInternal

  val DYNAMIC_FILTER_PUSHDOWN_RANGES: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.dynamicFilter.pushdownRanges", default = 32L,
    "An IN-set is also pushed into the scan as at most this many key ranges (cut at the widest gaps " +
      "between its sorted keys), so row groups between clusters of keys are skipped; 1 = min/max only.",
    min = 1L).asInternal

  val DYNAMIC_FILTER_MAX_FOOTER_FILES: ConfigEntry[Long] = ConfigEntry.long(
    "spark.sieve.dynamicFilter.maxFooterFiles", default = 1000L,
    "A Parquet scan listing at most this many files has their footers read on the driver (in parallel, " +
      "cached) once the keys are known, and skips the files whose row groups cannot hold a key; a scan of " +
      "more files reads 32 footers spread over its listing, which say whether key ranges pushed into its " +
      "readers would skip row groups and estimate what a filter keeps; 0 = never.").asInternal

  val TESTING_PLACE_EVERY_FILTER: ConfigEntry[Boolean] = ConfigEntry.boolean(
    "spark.sieve.testing.placeEveryFilter", default = false,
    "Testing only: a dynamic filter on every join its preconditions allow (every benefit check and threshold " +
      "off, keys pushed into every scan that takes them, each row tested, no pass-through), and every movable " +
      "bulk-filter or subquery predicate free to move ordered by a hash of its content, not by cost. What keeps " +
      "answers stays on: " +
      "deterministic keys, no predicate moved past one that can raise an error, byte-equal keys, creation " +
      "sides shared for certain. Spark's own suites and spark-sieve's answer tests run with it.").asInternal

  /** Whether every filter the preconditions allow is placed and every movable predicate moved (tests). */
  def placeEveryFilter(conf: SQLConf): Boolean = TESTING_PLACE_EVERY_FILTER.get(conf)

  /** Whether a filter whose broadcast joins probe the scan's rows in its stage also tests each row. */
  def sameStageRowTest(conf: SQLConf): Boolean =
    DYNAMIC_FILTER_SAME_STAGE_ROW_TEST.get(conf) || placeEveryFilter(conf)

  val all: Seq[ConfigEntry[_]] = Seq(ENABLED, BULK_FILTER_ENABLED, BULK_FILTER_COST_MODEL,
    BULK_FILTER_SAMPLE_ROWS, BULK_FILTER_BROADCAST_BYTES, BULK_FILTER_MAX_SET_BYTES, BULK_FILTER_ADAPTIVE_ORDER,
    SUBQUERY_ORDER_ENABLED, SUBQUERY_ORDER_COST_MODEL,
    DYNAMIC_FILTER_ENABLED,
    DYNAMIC_FILTER_MIN_APPLICATION_BYTES, DYNAMIC_FILTER_STAGE_START_BYTES, DYNAMIC_FILTER_WAIT_WEIGHT,
    DYNAMIC_FILTER_IDLE_CORE_SECOND_BYTES,
    DYNAMIC_FILTER_THROUGH_PRESERVED_SIDE, DYNAMIC_FILTER_BEFORE_SHUFFLE,
    DYNAMIC_FILTER_KEYS_FROM_BROADCAST_BELOW, DYNAMIC_FILTER_MIN_SIZE_RATIO, DYNAMIC_FILTER_AWAIT_PARTITION_PRUNING,
    DYNAMIC_FILTER_SAME_STAGE_ROW_TEST, DYNAMIC_FILTER_MAX_IN_SET_SIZE,
    DYNAMIC_FILTER_MAX_KEY_BYTES, DYNAMIC_FILTER_MAX_BLOOM_BYTES, DYNAMIC_FILTER_BLOOM_FPP,
    DYNAMIC_FILTER_MAX_PASS_RATIO, DYNAMIC_FILTER_PUSHDOWN_IN_SIZE, DYNAMIC_FILTER_PUSHDOWN_RANGES,
    DYNAMIC_FILTER_MAX_FOOTER_FILES, TESTING_PLACE_EVERY_FILTER)

  private val byKey: Map[String, ConfigEntry[_]] = all.map(e => e.key -> e).toMap

  /** Settings no longer read, with what took their place: a session that still sets one keeps working, with a
   * warning (once a key per JVM) rather than the unknown-key error. */
  val retired: Map[String, String] = Map(
    "spark.sieve.dynamicFilter.readBytesPerCoreSecond" -> ("the wait for a filter's keys is bounded by what the " +
      "cores it leaves idle cost: spark.sieve.dynamicFilter.idleCoreSecondBytes (docs/tuning.md)"))

  private val warnedRetired = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  def enabled(conf: SQLConf): Boolean = ENABLED.get(conf)

  /** Makes every setting known to Spark's SQL conf (`spark.conf.get`, `SET -v`); idempotent. */
  def registerWithSpark(): Unit = registered

  private lazy val registered: Unit =
    all.foreach(e => SieveSqlConf.register(e.key, s"${e.doc} (${e.typeName})", e.defaultString, e.internal))

  /**
   * Checks every `spark.sieve.*` key the session holds: an unknown key (a typo such as
   * `spark.sieve.enable`) or a bad value is an error naming it, instead of being ignored.
   */
  def validate(conf: SQLConf): Unit = {
    conf.getAllConfs.keys.filter(_.startsWith(Prefix)).toSeq.sorted.foreach { key =>
      (byKey.get(key), retired.get(key)) match {
        case (Some(entry), _) => entry.get(conf)
        case (None, Some(successor)) =>
          if (warnedRetired.add(key)) logWarning(s"$key is deprecated and no longer read: $successor")
        case (None, None) => throw new SieveConfigException(key, unknownKeyMessage(key))
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
