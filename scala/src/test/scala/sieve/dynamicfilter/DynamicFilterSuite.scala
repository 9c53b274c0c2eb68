package sieve.dynamicfilter

import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan

import sieve.SieveSessionSuite
import sieve.dynamicfilter.FilterViews._
import sieve.scan.KeyPrunedFileIndex

/** Dynamic filters end to end: answers vs vanilla Spark (AQE on/off, broadcast and sort-merge), the
 * filter in the executed plan, wired to its join, and what it chose and dropped. */
class DynamicFilterSuite extends SieveSessionSuite {
  private lazy val dir = Files.createTempDirectory("sieve-df").toFile

  /** fact: 40,000 rows, k in [0, 2000), sorted by k in small row groups (so ranges skip row groups);
   * dim: 2,000 rows, unique k, cat = k % 100, grp = k / 20; (a, b) for composite keys. */
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(40000).selectExpr("CAST(id % 2000 AS INT) AS k", "id AS v", "CAST(id % 7 AS INT) AS a", "CAST(id % 11 AS INT) AS b")
      .orderBy("k").coalesce(1).write.option("parquet.block.size", 16384).parquet(s"$dir/fact")
    spark.range(2000).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat", "CAST(id DIV 20 AS INT) AS grp",
      "CAST(id % 7 AS INT) AS a",
      "CAST(id % 11 AS INT) AS b").write.parquet(s"$dir/dim")
    // the same fact rows in 8 files by key range (250 keys each), row groups of ~100 keys
    spark.read.parquet(s"$dir/fact").repartitionByRange(8, org.apache.spark.sql.functions.col("k")).sortWithinPartitions("k")
      .write.option("parquet.block.size", 16384).parquet(s"$dir/fact_files")
    // and in 80 files of one 500-row row group each
    spark.read.parquet(s"$dir/fact").repartitionByRange(80, org.apache.spark.sql.functions.col("k")).sortWithinPartitions("k")
      .write.parquet(s"$dir/fact_small_files")
    // not sorted: every row group holds keys from all over [0, 2000)
    spark.range(40000).selectExpr("CAST(pmod(hash(id), 2000) AS INT) AS k", "id AS v").coalesce(1)
      .write.option("parquet.block.size", 16384).parquet(s"$dir/fact_unsorted")
    // one key value in every row group
    spark.range(40000).selectExpr("CAST(7 AS INT) AS k", "id AS v").coalesce(1)
      .write.option("parquet.block.size", 16384).parquet(s"$dir/fact_constant")
    // fact_unsorted's rows with a string key: one row group; sorted by it in small row groups
    spark.read.parquet(s"$dir/fact_unsorted").selectExpr("CAST(k AS STRING) AS ks", "v").coalesce(1)
      .write.parquet(s"$dir/fact_text")
    spark.read.parquet(s"$dir/fact_text").orderBy("ks").coalesce(1)
      .write.option("parquet.block.size", 16384).parquet(s"$dir/fact_text_groups")
    // 8,000 (a, b) pairs over fact's 77
    spark.range(8000).selectExpr("CAST(id % 7 AS INT) AS a", "CAST(id % 11 AS INT) AS b", "id AS v")
      .write.parquet(s"$dir/pairs")
    // a small table of 20 keys spread over fact's [0, 2000)
    spark.range(20).selectExpr("CAST(id * 100 AS INT) AS k").write.parquet(s"$dir/dim_few")
    // a creation side sorted by its key k in small row groups (ten rows a key): r has nothing to do with k,
    // g = k DIV 200 follows it
    spark.range(20000).selectExpr("CAST(id DIV 10 AS INT) AS k", "CAST(pmod(hash(id), 100) AS INT) AS r",
      "CAST(id DIV 2000 AS INT) AS g").coalesce(1).write.option("parquet.block.size", 16384).parquet(s"$dir/dim_sorted")
    // and as ORC (row index stride 10,000 rows: 4 row groups, sorted by k)
    spark.read.parquet(s"$dir/fact").coalesce(1).write.orc(s"$dir/fact_orc")
  }

  private def views(s: SparkSession): Unit = {
    s.read.parquet(s"$dir/fact").createOrReplaceTempView("fact")
    s.read.parquet(s"$dir/dim").createOrReplaceTempView("dim")
    s.read.parquet(s"$dir/fact_files").createOrReplaceTempView("fact_files")
    s.read.parquet(s"$dir/fact_small_files").createOrReplaceTempView("fact_small_files")
    s.read.orc(s"$dir/fact_orc").createOrReplaceTempView("fact_orc")
    s.read.parquet(s"$dir/fact_unsorted").createOrReplaceTempView("fact_unsorted")
    s.read.parquet(s"$dir/fact_constant").createOrReplaceTempView("fact_constant")
    s.read.parquet(s"$dir/dim_few").createOrReplaceTempView("dim_few")
    s.read.parquet(s"$dir/fact_text").createOrReplaceTempView("fact_text")
    s.read.parquet(s"$dir/fact_text_groups").createOrReplaceTempView("fact_text_groups")
    s.read.parquet(s"$dir/pairs").createOrReplaceTempView("pairs")
    s.read.parquet(s"$dir/dim_sorted").createOrReplaceTempView("dim_sorted")
  }

  private def sql(text: String): SparkSession => DataFrame = { s => views(s); s.sql(text) }

  /** Settings that let the small test tables qualify. */
  // every row tested, also below broadcast joins (the default leaves those rows to the joins' probes), so
  // that the tests here see what a filter keeps; the default's own test sets it back
  private def withDynamicFilters[T](extra: (String, String)*)(body: => T): T =
    withConf(Seq("spark.sieve.dynamicFilter.waitWeight" -> "0",
      "spark.sieve.dynamicFilter.sameStageRowTest" -> "true") ++ extra: _*)(body)

  private def filters(df: DataFrame): Seq[DynamicFilterExec] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case f: DynamicFilterExec => f }

  /** A metric of the operator, or of its first filter. */
  private def metric(f: DynamicFilterExec, name: String): Long =
    f.metrics.getOrElse(name, f.metrics(f.metricName(name, 0))).value

  private val starJoin = "SELECT f.k, f.v, d.cat FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7"

  Seq("broadcast" -> "10485760", "sort-merge" -> "-1").foreach { case (strategy, threshold) =>
    testWithAndWithoutAqe(s"star join, $strategy: same answer, the fact scan filtered by the dim's keys") {
      withDynamicFilters("spark.sql.autoBroadcastJoinThreshold" -> threshold,
          "spark.sql.adaptive.autoBroadcastJoinThreshold" -> threshold) {
        val df = checkAnswerAgainstVanilla(sql(starJoin))
        val Seq(f) = filters(df)
        assert(f.filterCount === 1, s"not one filter:\n${df.queryExecution.executedPlan}")
        assert(f.broadcast === Seq(strategy == "broadcast"))
        assert(f.filterDescription(0).startsWith("in-set of 20 keys"), f.filterDescription(0))
        assert(metric(f, "numOutputRows") === 400)
        // the range [7, 1907] pushed into the sorted fact skips no row group here; rows in are all read
        assert(metric(f, "numInputRows") <= 40000 && metric(f, "numInputRows") >= 400)
      }
    }
  }

  testWithAndWithoutAqe("a narrow key range is pushed into the Parquet scan: row groups are skipped") {
    withDynamicFilters() {
      // keys 100..119, which Spark cannot infer from `grp = 5` (it would from a filter on d.k itself)
      val q = "SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.grp = 5"
      val df = checkAnswerAgainstVanilla(sql(q))
      val Seq(f) = filters(df)
      assert(f.filterDescription(0).contains("pushed to scan"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") === 400)
      assert(metric(f, "numInputRows") < 40000 / 4, "the pushed IN-set / range should skip most row groups")
    }
  }

  testWithAndWithoutAqe("a scan whose own filters skip row groups is weighed by the bytes of those it reads") {
    // sort-merge: a filter on fact would make its scan wait for dim's keys; fact's own k < 200 keeps a tenth of
    // its row groups (sorted by k), so it reads a tenth of its bytes, which the decline names
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      val reads = """the scan of fact reads (\d+) bytes \(of (\d+): the row groups its filters keep\)""".r
      val df = checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7 AND f.k < 200"))
      val text = DynamicFilterExplain(df.queryExecution.executedPlan).mkString("\n")
      val m = reads.findFirstMatchIn(text).getOrElse(fail(text))
      assert(m.group(1).toLong > 0 && m.group(1).toLong * 5 < m.group(2).toLong, text)
      // all of them without a filter of its own
      val whole = checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7"))
      assert(!DynamicFilterExplain(whole.queryExecution.executedPlan).mkString("\n").contains("the row groups its filters keep"))
    }
  }

  testWithAndWithoutAqe("Parquet footers: files and row groups between clusters of keys are skipped") {
    withDynamicFilters() {
      // grp 1 and 98: keys 20..39 and 1960..1979, in the first and the last of the 8 files
      val q = "SELECT f.k, f.v FROM fact_files f JOIN dim d ON f.k = d.k WHERE d.grp IN (1, 98)"
      val df = checkAnswerAgainstVanilla(sql(q))
      val Seq(f) = filters(df)
      assert(metric(f, "filesSkipped") === 6, f.filterDescription(0))
      assert(metric(f, "rowGroupsSkipped") > 6, f.filterDescription(0))
      assert(metric(f, "rowsSkipped") > 30000, f.filterDescription(0))
      assert(metric(f, "numOutputRows") === 800)
      assert(metric(f, "numInputRows") < 40000 / 8, "the two key ranges should leave few row groups to read")
      assert(f.filterDescription(0).contains("in 2 ranges") || f.filterDescription(0).contains(" OR "), f.filterDescription(0))
      assert(f.filterDescription(0).contains("footers of 8 files read: 6 files"), f.filterDescription(0))
      // the plan's own fact scan reports what its filtered copy read (the Spark UI shows these)
      val scans = collectWithSubqueries(df.queryExecution.executedPlan) {
        case s: org.apache.spark.sql.execution.FileSourceScanExec if s.relation.location.rootPaths.head.toString.contains("fact_files") => s
      }
      assert(scans.map(_.metrics("numFiles").value) === Seq(2))
      assert(scans.map(_.metrics("numOutputRows").value) === Seq(metric(f, "numInputRows")))
    }
    withDynamicFilters("spark.sieve.dynamicFilter.maxFooterFiles" -> "7") { // 8 files: footers not read
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(
        "SELECT f.k, f.v FROM fact_files f JOIN dim d ON f.k = d.k WHERE d.grp IN (1, 98)")))
      // no file is left out of the listing, but 7 footers of the 8 show row groups the ranges rule out: the
      // ranges go to each file's reader, which skips them
      assert(metric(f, "filesSkipped") === 0, f.filterDescription(0))
      assert(f.filterDescription(0).contains("footers not read (8 files > maxFooterFiles), 7 sampled: row groups to skip"),
        f.filterDescription(0))
      assert(f.filterDescription(0).contains("in 2 ranges") || f.filterDescription(0).contains(" OR "), f.filterDescription(0))
      assert(metric(f, "numInputRows") < 40000 / 4 && metric(f, "numOutputRows") === 800)
    }
    withDynamicFilters("spark.sieve.dynamicFilter.maxFooterFiles" -> "7") {
      // every third key: some in every row group; pushed, they would only cost each reader its checks
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(
        "SELECT f.k, f.v FROM fact_files f JOIN dim d ON f.k = d.k WHERE d.cat % 3 = 0")))
      assert(f.filterDescription(0).contains("7 sampled: fewer than 4096 rows a reader to skip, nothing pushed"), f.filterDescription(0))
      assert(!f.filterDescription(0).contains("pushed to scan"), f.filterDescription(0))
      assert(metric(f, "numInputRows") === 40000 && metric(f, "numOutputRows") === 13600)
    }
  }

  test("a scan whose footers are sampled gets no ranges where its readers would skip too few rows to pay") {
    // fact_small_files: the keys of grp 1 and 98 lie in two of its 80 files; the others' readers would skip their
    // one row group each, 500 rows, less than a pushed filter costs
    withDynamicFilters("spark.sieve.dynamicFilter.maxFooterFiles" -> "40") {
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(
        "SELECT f.k, f.v FROM fact_small_files f JOIN dim d ON f.k = d.k WHERE d.grp IN (1, 98)")))
      assert(f.filterDescription(0).contains(
        "footers not read (80 files > maxFooterFiles), 32 sampled: fewer than 4096 rows a reader to skip, nothing pushed"),
        f.filterDescription(0))
      assert(metric(f, "numInputRows") === 40000 && metric(f, "numOutputRows") === 800)
    }
  }

  test("footer sample: every file up to maxFooterFiles, beyond it SampleFiles spread over the listing") {
    import org.apache.hadoop.fs.{FileStatus, Path}
    val files = (0 until 100).map(i => new FileStatus(1L, false, 1, 1L, 0L, new Path(s"/t/f$i")))
    assert(KeyPrunedFileIndex.footerSample(files, 100) === files)
    val sample = KeyPrunedFileIndex.footerSample(files, 99)
    assert(sample.size === KeyPrunedFileIndex.SampleFiles && sample.distinct.size === sample.size)
    assert(sample.head === files.head && sample.last.getPath.getName.stripPrefix("f").toInt >= 90)
    assert(KeyPrunedFileIndex.footerSample(files, 10).size === 10)
    assert(KeyPrunedFileIndex.footerSample(files, 0).isEmpty)
  }

  test("key ranges pushed into a Parquet reader turn its dictionary filter off, which tests each range against every dictionary value") {
    // fact_files' 8 footers not read (as in a partitioned table's scan): the ranges go to each file's reader
    withConf("spark.sql.adaptive.enabled" -> "false", "spark.sieve.dynamicFilter.maxFooterFiles" -> "7") {
      val plan = sql("SELECT k, v FROM fact_files")(spark).queryExecution.executedPlan
        .collectFirst { case s: org.apache.spark.sql.execution.FileSourceScanExec => s }.get
      val k = plan.output.head
      def inSet(keys: Seq[Long]) = {
        val set = new sieve.membership.LongSet()
        keys.foreach(set.add)
        new sieve.keyset.InSetKeys(sieve.membership.KeyShape(Seq(k.dataType)), Some(set), None, Some((keys.min, keys.max)))
      }
      def pushed(keys: Seq[Long]) = {
        val (p, what) = sieve.scan.KeyScanPushdown(plan, k, inSet(keys), sieve.scan.KeyScanPushdown.Limits.from(spark.sessionState.conf),
          spark.sessionState.conf, _ => ())
        (p.collectFirst { case s: org.apache.spark.sql.execution.FileSourceScanExec => s.relation.options }.get, what.predicates)
      }
      // two clusters of keys: two ranges, an OR, pushed; the dictionary filter off for this scan only
      val (options, predicates) = pushed((20L to 39L) ++ (1960L to 1979L))
      assert(predicates.exists(_.exists(_.isInstanceOf[org.apache.spark.sql.catalyst.expressions.Or])), predicates)
      assert(options.get("parquet.filter.dictionary.enabled") === Some("false"), options)
      // one range: left as it is
      val (one, single) = pushed(20L to 39L)
      assert(single.nonEmpty && !one.contains("parquet.filter.dictionary.enabled"), (one, single))
    }
  }

  testWithAndWithoutAqe("an ORC scan gets the key ranges too: its row groups are skipped") {
    withDynamicFilters() {
      val df = checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact_orc f JOIN dim d ON f.k = d.k WHERE d.grp = 5"))
      val Seq(f) = filters(df)
      assert(f.filterDescription(0).contains("pushed to scan"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") === 400)
      assert(metric(f, "numInputRows") <= 10000, "keys 100..119 lie in the first of 4 ORC row groups")
      assert(metric(f, "filesSkipped") === 0) // footers are read for Parquet only
    }
  }

  testWithAndWithoutAqe("by default a filter whose broadcast joins probe the scan's rows in its stage is pushed into the scan, not tested per row") {
    // keys 100..119: every row group of the unsorted fact holds keys from all over [0, 2000)
    val q = "SELECT f.v FROM %s f JOIN dim d ON f.k = d.k WHERE d.grp = 5"
    def only(df: DataFrame) = { val Seq(f) = filters(df); assert(f.filterCount === 1); f }
    withDynamicFilters("spark.sieve.dynamicFilter.sameStageRowTest" -> "false") {
      // its footers show every row group holding keys from all over the range: no key set skips one, so
      // the join gets no filter at all (no key collection, no check pushed into the reader)
      val spread = checkAnswerAgainstVanilla(sql(q.format("fact_unsorted")))
      assert(filters(spread).isEmpty)
      val why = DynamicFilterExplain(spread.queryExecution.executedPlan).mkString("\n")
      assert(why.contains("k's values are spread over every row group (sampled footers)"), why)
      // one value everywhere is not spread: keys without it rule out every row group (here the one file)
      val constant = only(checkAnswerAgainstVanilla(sql(q.format("fact_constant"))))
      assert(metric(constant, "filesSkipped") === 1, constant.filterDescription(0))
      // a string key (its statistics not read from the footers) into a scan of one row group: none either
      val textQ = "SELECT f.v FROM %s f JOIN dim d ON f.ks = CAST(d.k AS STRING) WHERE d.grp = 5"
      val oneGroup = checkAnswerAgainstVanilla(sql(textQ.format("fact_text")))
      assert(filters(oneGroup).isEmpty)
      val oneWhy = DynamicFilterExplain(oneGroup.queryExecution.executedPlan).mkString("\n")
      assert(oneWhy.contains("is one row group (footers), which keys of ks would skip only if none lay in its range"),
        oneWhy)
      // of several row groups, sorted by it: pushed, as its keys may skip some
      val groups = only(checkAnswerAgainstVanilla(sql(textQ.format("fact_text_groups"))))
      assert(groups.probedInStage === Seq(true) && groups.passesRows, groups.filterDescription(0))
    }
    withDynamicFilters("spark.sieve.dynamicFilter.sameStageRowTest" -> "false",
        "spark.sieve.dynamicFilter.maxFooterFiles" -> "0") { // footers not read: they do not say so
      val f = only(checkAnswerAgainstVanilla(sql(q.format("fact_unsorted"))))
      assert(f.probedInStage === Seq(true))
      assert(metric(f, "droppedBeforeScan") === 0 && metric(f, "rowsTested") === 0, f.filterDescription(0))
      assert(f.filterDescription(0).contains("not tested per row: the broadcast join it reads probes each of"),
        f.filterDescription(0))
      // no code per row at all: the rows pass uncounted, the join drops them
      assert(f.passesRows && metric(f, "numInputRows") === 0 && metric(f, "numOutputRows") === 0)
    }
    withDynamicFilters("spark.sieve.dynamicFilter.sameStageRowTest" -> "false") {
      // sorted by k, the same keys rule out most row groups: pushed into the scan, which skips them
      val sortedDf = checkAnswerAgainstVanilla(sql(q.format("fact")))
      val sorted = only(sortedDf)
      assert(sorted.probedInStage === Seq(true) && sorted.passesRows)
      val scanned = collectWithSubqueries(sortedDf.queryExecution.executedPlan) {
        case s: org.apache.spark.sql.execution.FileSourceScanExec => s.metrics("numOutputRows").value
      }
      assert(scanned.max <= 10000 && sorted.filterDescription(0).contains("pushed to scan"), sorted.filterDescription(0))
      // a shuffle between the scan and the join: every row the filter drops is one not shuffled
      withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
        val shuffled = only(checkAnswerAgainstVanilla(sql(q.format("fact_unsorted"))))
        assert(shuffled.probedInStage === Seq(false))
        assert(metric(shuffled, "rowsTested") === 40000 && metric(shuffled, "numOutputRows") < 1000,
          shuffled.filterDescription(0))
      }
    }
    withDynamicFilters() { // sameStageRowTest on: every row tested
      val f = only(checkAnswerAgainstVanilla(sql(q.format("fact_unsorted"))))
      assert(metric(f, "rowsTested") === 40000 && metric(f, "numOutputRows") < 1000, f.filterDescription(0))
    }
  }

  test("Parquet footers: no key at all skips every file") {
    withDynamicFilters("spark.sql.adaptive.enabled" -> "false") { // AQE would drop the join itself
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(
        "SELECT f.v FROM fact_files f JOIN dim d ON f.k = d.k WHERE d.cat = 1000")))
      assert(metric(f, "filesSkipped") === 8, f.filterDescription(0))
      assert(metric(f, "numInputRows") === 0)
    }
  }

  testWithAndWithoutAqe("left semi join, outer joins' non-preserved side, composite keys") {
    withDynamicFilters() {
      val semi = checkAnswerAgainstVanilla(sql("SELECT * FROM fact WHERE k IN (SELECT k FROM dim WHERE cat = 3)"))
      assert(filters(semi).map(f => metric(f, "numOutputRows")) === Seq(400))
      withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") { // else the fact side is the one broadcast
        val outer = checkAnswerAgainstVanilla(sql(
          "SELECT d.k, f.v FROM (SELECT * FROM dim WHERE cat = 3) d LEFT JOIN fact f ON f.k = d.k"))
        assert(filters(outer).map(f => metric(f, "numOutputRows")) === Seq(400))
        val right = checkAnswerAgainstVanilla(sql(
          "SELECT d.k, f.v FROM fact f RIGHT JOIN (SELECT * FROM dim WHERE cat = 3) d ON f.k = d.k"))
        assert(filters(right).map(f => metric(f, "numOutputRows")) === Seq(400))
      }
      val composite = checkAnswerAgainstVanilla(sql(
        "SELECT f.v FROM fact f JOIN dim d ON f.a = d.a AND f.b = d.b WHERE d.cat = 5"))
      val Seq(f) = filters(composite)
      assert(f.keys.map(_.size) === Seq(2))
      assert(metric(f, "numOutputRows") < 40000)
    }
  }

  test("no filter where it cannot pay off or is not allowed") {
    val preserved = "SELECT f.v, d.cat FROM fact f LEFT JOIN (SELECT * FROM dim WHERE cat = 3) d ON f.k = d.k"
    val full = "SELECT f.v, d.cat FROM fact f FULL JOIN (SELECT * FROM dim WHERE cat = 3) d ON f.k = d.k"
    val unfilteredSameSize = "SELECT * FROM fact f JOIN fact g ON f.v = g.v"
    withDynamicFilters() {
      Seq(preserved, full, unfilteredSameSize).foreach { q =>
        assert(filters(checkAnswerAgainstVanilla(sql(q))).isEmpty, q)
      }
    }
    // the defaults: a broadcast join probing the fact's rows in their stage makes the scan wait for nothing,
    // so its keys are pushed into the scan (the fact is sorted by k) and its rows left to the join; a sort-merge
    // join's other side would make the scan wait for more than these tables hold (a stage's start): no filter
    val pushed = filters(checkAnswerAgainstVanilla(sql(starJoin)))
    assert(pushed.size === 1 && pushed.head.passesRows, pushed)
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      val df = checkAnswerAgainstVanilla(sql(starJoin))
      assert(filters(df).isEmpty, df.queryExecution.executedPlan)
      assert(DynamicFilterExplain(df.queryExecution.executedPlan).mkString("\n").contains("+ stageStartBytes (8388608)"))
    }
    withDynamicFilters("spark.sieve.dynamicFilter.enabled" -> "false") {
      assert(filters(checkAnswerAgainstVanilla(sql(starJoin))).isEmpty)
    }
    withDynamicFilters("spark.sieve.enabled" -> "false") {
      assert(filters(checkAnswerAgainstVanilla(sql(starJoin))).isEmpty)
    }
  }

  test("a decline names the setting that would place the filter, and that value places it") {
    val placedWith = """placed with (spark\.[\w.]+) (?:<=|>=|=|<) ([\w.]+)""".r
    val smj = Seq("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1")
    // the star join: the wait for the dimension's keys outweighs what the filter saves on tables this small (AQE off:
    // under AQE a filter placed at the break-even weight has no time left to wait, and the wait bound ends it, which
    // names idleCoreSecondBytes); fact by the whole dim (the wait not weighed): a creation side not 50 times smaller than
    // its scan, whose keys are all of fact's
    Seq((starJoin, Seq("spark.sieve.dynamicFilter.waitWeight" -> "1"), Seq("waitWeight")),
        ("SELECT count(*), sum(f.v), sum(d.cat) FROM fact f JOIN dim d ON f.k = d.k",
          Seq("spark.sieve.dynamicFilter.waitWeight" -> "0", "spark.sieve.dynamicFilter.minSizeRatio" -> "50"),
          Seq("minSizeRatio", "maxPassRatio"))).foreach { case (q, base, expected) =>
      var settings = smj ++ base :+ ("spark.sql.adaptive.enabled" -> "false")
      def run(): DataFrame = withConf(settings: _*)(checkAnswerAgainstVanilla(sql(q)))
      var df = run()
      val named = scala.collection.mutable.Buffer[String]()
      while (filters(df).isEmpty && named.size < expected.size) {
        val text = DynamicFilterExplain(df.queryExecution.executedPlan).mkString("\n")
        val m = placedWith.findFirstMatchIn(text).getOrElse(fail(text))
        named += m.group(1)
        settings :+= m.group(1) -> m.group(2)
        df = run()
      }
      assert(named === expected.map("spark.sieve.dynamicFilter." + _), q)
      assert(filters(df).nonEmpty, s"$settings:\n${DynamicFilterExplain(df.queryExecution.executedPlan).mkString("\n")}")
    }
  }

  test("the creation side's footers say where its keys can lie: a filter whose keys lie in every row group of the scan saves no read") {
    // a sort-merge join, its shuffle not counted (beforeShuffle=false): what a filter saves is the fact's read
    // its keys can skip; the wait weighed little, so any saving pays
    withConf("spark.sql.adaptive.enabled" -> "false", "spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sieve.dynamicFilter.beforeShuffle" -> "false", "spark.sieve.dynamicFilter.waitWeight" -> "0.01") {
      val path = new org.apache.hadoop.fs.Path(s"$dir/dim_sorted")
      val files = path.getFileSystem(spark.sessionState.newHadoopConf()).listStatus(path).toSeq
        .filter(_.getPath.getName.endsWith(".parquet"))
      assert(KeyPrunedFileIndex.readAll(files, "k", caseSensitive = false, spark.sessionState.newHadoopConf())
        .values.map(_.length).sum >= 4, "dim_sorted is not in several row groups")
      // r = 3 is in every row group of dim_sorted: its keys can be anywhere in [0, 2000)
      val spread = checkAnswerAgainstVanilla(sql("SELECT f.k, f.v FROM fact f JOIN dim_sorted d ON f.k = d.k WHERE d.r = 3"))
      assert(filters(spread).isEmpty, spread.queryExecution.executedPlan)
      val text = DynamicFilterExplain(spread.queryExecution.executedPlan).mkString("\n")
      assert(text.contains("its creation side's footers leave its keys in every row group of k (sampled), so they " +
        "would skip none and no row it drops would go into a shuffle or an aggregate as it is, so nothing it saves " +
        "outweighs"), text)
      // g = 3 is in the row groups of keys [600, 800) only: placed, and it skips the fact's other row groups
      val narrow = checkAnswerAgainstVanilla(sql("SELECT f.k, f.v FROM fact f JOIN dim_sorted d ON f.k = d.k WHERE d.g = 3"))
      val Seq(f) = filters(narrow)
      assert(metric(f, "rowGroupsSkipped") > 0, narrow.queryExecution.executedPlan)
      // a filter the footers cannot say anything of (dim: one row group) counts its whole read, as before
      assert(filters(checkAnswerAgainstVanilla(sql("SELECT f.k, f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7")))
        .size === 1)
    }
  }

  testWithAndWithoutAqe("a filter whose keys would keep nearly every row is dropped before the scan starts") {
    withDynamicFilters("spark.sieve.dynamicFilter.minSizeRatio" -> "1") {
      // every dim key (a filter that keeps every row: the planner cannot tell): all 40,000 fact rows match, so
      // the filter is dropped from the broadcast keys' count and range alone, before they are collected into a set
      val reads = KeyCollector.reads.get
      val all = checkAnswerAgainstVanilla(sql("SELECT f.v, d.cat FROM fact_files f JOIN dim d ON f.k = d.k WHERE d.cat >= 0"))
      val Seq(f) = filters(all)
      assert(f.filterDescription(0).contains("dropped before the scan: expected to keep 100% of its rows") &&
        f.filterDescription(0).contains("keys in [") &&
        f.filterDescription(0).endsWith("not collected); placed with spark.sieve.dynamicFilter.maxPassRatio >= 1.000"),
        f.filterDescription(0))
      assert(KeyCollector.reads.get === reads && metric(f, "numKeys") === 0)
      assert(metric(f, "droppedBeforeScan") === 1 && metric(f, "rowsTested") === 0)
      assert(f.passesRows && metric(f, "numOutputRows") === 0 && metric(f, "filesSkipped") === 0)
      // half the keys, spread over the whole range: expected to keep half, so it stays
      val half = checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact_files f JOIN dim d ON f.k = d.k WHERE d.cat < 50"))
      val Seq(g) = filters(half)
      assert(metric(g, "droppedBeforeScan") === 0 && metric(g, "numOutputRows") === 20000, g.filterDescription(0))
      val keep = """expected to keep ([0-9.]+)% of the scan's rows""".r.findFirstMatchIn(g.filterDescription(0))
      assert(keep.exists(m => m.group(1).toDouble > 45 && m.group(1).toDouble < 55), g.filterDescription(0))
    }
  }

  testWithAndWithoutAqe("a shuffle's keys that outnumber the rows expected to reach their filter are not collected") {
    // fact's 40,000 rows get two filters: dim's keys (a broadcast) and pairs' 6,000 (a, b) rows (a shuffle:
    // the semi join is a sort-merge join); dim's 20 keys of grp 5 are expected to keep 1% of the rows
    val q = "SELECT /*+ MERGE(p) */ f.v FROM fact f JOIN dim d ON f.k = d.k " +
      "LEFT SEMI JOIN (SELECT a, b FROM pairs WHERE v < 6000) p ON f.a = p.a AND f.b = p.b WHERE d.grp %s"
    val aqe = spark.conf.get("spark.sql.adaptive.enabled").toBoolean
    def pairsFilter(df: DataFrame): (DynamicFilterExec, Int) = {
      val Seq(f) = filters(df)
      (f, (0 until f.filterCount).find(f.filterKeys(_).size == 2).get)
    }
    withDynamicFilters() {
      val df = checkAnswerAgainstVanilla(sql(q.format("= 5")))
      val (f, i) = pairsFilter(df)
      assert(f.filterCount === 2, f)
      assert(f.broadcast.zip(f.filterOf).collect { case (b, `i`) => b } === Seq(false))
      val why = f.filterDescription(i)
      if (aqe) {
        // ~400 rows reach it: collecting 6,000 keys to test them costs more than it could spare
        assert(why.contains("dropped before the scan: its creation side's 6000 rows outnumber the ~") &&
          why.contains("(the scan's 40000 rows in its footers times the ") && why.endsWith("(not collected)"),
          s"$why\n${f.filterDescription(1 - i)}\n${df.queryExecution.executedPlan}")
        val reach = """outnumber the ~(\d+) expected""".r.findFirstMatchIn(why).get.group(1).toInt
        assert(reach > 200 && reach < 1000, why)
        assert(f.metrics(f.metricName("numKeys", i)).value === 0 && f.metrics(f.metricName("droppedBeforeScan", i)).value === 1)
        assert(f.metrics(f.metricName("rowsTested", i)).value === 0)
      } else { // without AQE the shuffle's rows are not known: the filter is built
        assert(!why.contains("dropped"), why)
        assert(f.metrics(f.metricName("numKeys", i)).value > 0)
      }
      // dim's filter is built either way and keeps its 400 rows
      assert(f.metrics(f.metricName("rowsKept", 1 - i)).value === 400, f.filterDescription(1 - i))
    }
    withDynamicFilters() {
      // every dim key: its filter keeps every row (dropped), so all 40,000 reach pairs' filter, which is built
      val (f, i) = pairsFilter(checkAnswerAgainstVanilla(sql(q.format(">= 0"))))
      assert(!f.filterDescription(i).contains("dropped") && f.metrics(f.metricName("numKeys", i)).value > 0,
        f.filterDescription(i))
    }
  }

  testWithAndWithoutAqe("an unfiltered table whose footers say its keys keep nearly every row gets no filter") {
    withDynamicFilters("spark.sieve.dynamicFilter.minSizeRatio" -> "1") {
      // dim as it is: 2,000 rows over [0, 1999], every key of fact's; nothing waits for its keys
      val whole = checkAnswerAgainstVanilla(sql("SELECT f.v, d.cat FROM fact_files f JOIN dim d ON f.k = d.k"))
      assert(filters(whole).isEmpty, whole.queryExecution.executedPlan)
      val why = DynamicFilterExplain(whole.queryExecution.executedPlan).mkString("\n")
      assert(why.contains("the creation side is a whole table whose 2000 keys in [0, 1999] would keep 100% of " +
        "the scan of fact_files's rows"), why)
      // 20 keys over the same range: a small table that keeps few rows keeps its filter (400 of 40,000 rows)
      val few = checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact_files f JOIN dim_few d ON f.k = d.k"))
      val Seq(f) = filters(few)
      assert(metric(f, "droppedBeforeScan") === 0 && metric(f, "numOutputRows") === 400, f.filterDescription(0))
      // footers not read: the planner cannot tell, the run-time check drops it
      withConf("spark.sieve.dynamicFilter.maxFooterFiles" -> "0") {
        assert(filters(checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact_files f JOIN dim d ON f.k = d.k"))).size === 1)
      }
    }
  }

  test("filters are placed on the physical plan: the optimized plan is vanilla's, the placement idempotent") {
    withDynamicFilters("spark.sql.adaptive.enabled" -> "false") {
      views(spark)
      val qe = spark.sql(starJoin).queryExecution
      assert(qe.optimizedPlan.sameResult(
        withConf("spark.sieve.enabled" -> "false")(spark.sql(starJoin).queryExecution.optimizedPlan)))
      val placed = qe.executedPlan.collect { case f: DynamicFilterExec => f }
      assert(placed.size === 1)
      val once = placeFilters(spark, qe.executedPlan)
      assert(once.collect { case f: DynamicFilterExec => f.filterCount } === Seq(1))
      assert(placeFilters(spark, once).collect { case f: DynamicFilterExec => f.filterCount } === Seq(1))
    }
  }

  testWithAndWithoutAqe("filter kinds: bitmap or bloom when keys exceed the limits, empty when none survive") {
    val sortMerge = Seq("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1")
    // 20 keys 100 apart: too sparse for a bitmap
    withDynamicFilters(Seq("spark.sieve.dynamicFilter.maxInSetSize" -> "10") ++ sortMerge: _*) {
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(starJoin)))
      assert(f.filterDescription(0).startsWith("bloom filter"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") >= 400 && metric(f, "numOutputRows") < 4000)
    }
    // 1,000 keys over [0, 2000): dense, so an exact bitmap
    withDynamicFilters(Seq("spark.sieve.dynamicFilter.maxKeyBytes" -> "1024") ++ sortMerge: _*) {
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat < 50")))
      assert(f.filterDescription(0).startsWith("bitmap of 248 bytes, range [0, 1949]"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") === 20000 && metric(f, "filterBytes") === 248) // 1,950 bits
    }
    // composite keys overflow into a bloom filter of the key rows' bytes
    withDynamicFilters(Seq("spark.sieve.dynamicFilter.maxInSetSize" -> "3") ++ sortMerge: _*) {
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(
        "SELECT f.v FROM fact f JOIN dim d ON f.a = d.a AND f.b = d.b WHERE d.cat = 5")))
      assert(f.keys.head.size === 2 && f.filterDescription(0).startsWith("bloom filter"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") < 40000)
    }
    // under a broadcast join too the bloom filter tests each row (ahead of the join's larger hash probe)
    withDynamicFilters("spark.sieve.dynamicFilter.maxInSetSize" -> "10") {
      val Seq(f) = filters(checkAnswerAgainstVanilla(sql(starJoin)))
      assert(f.broadcast.head && f.filterDescription(0).startsWith("bloom filter"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") >= 400 && metric(f, "numOutputRows") < 4000)
    }
    withDynamicFilters() {
      val df = checkAnswerAgainstVanilla(sql("SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 1000"))
      filters(df).foreach(f => assert(metric(f, "numOutputRows") === 0))
    }
  }

  // fact's k has 20 rows, v = k + 2000 * j for j < 20: sum(v) = 20 k + 380,000, above 419,780 for the 10 keys from 1,990
  private val havingKeys = "SELECT k FROM fact GROUP BY k HAVING sum(v) > 419780"

  testWithAndWithoutAqe("a sort-merge join's side with no exchange of its own: its aggregate's keys computed again from its shuffle") {
    withDynamicFilters("spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      val df = checkAnswerAgainstVanilla(sql(s"SELECT f.k, f.v FROM fact_unsorted f WHERE f.k IN ($havingKeys)"))
      val Seq(f) = filters(df)
      assert(f.describeFilter(0).contains("(computed from a shuffle)"), f.describeFilter(0))
      assert(f.filterDescription(0).startsWith("in-set of 10 keys"), f.filterDescription(0))
      // every row kept has one of the keys: the semi join's rows, dropped before fact_unsorted's shuffle
      assert(metric(f, "numOutputRows") === df.count() && metric(f, "numInputRows") === 40000)
      val computed = f.creations.collect { case ComputedKeys(c) => c }
      assert(computed.size === 1 && ComputedKeys.shuffles(computed.head).nonEmpty, f.creations)
    }
  }

  test("keys computed again only from operators that give the same rows in any order of the shuffle's blocks") {
    withDynamicFilters("spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      // a sum of doubles depends on the order of its rows; a first() on which row comes first
      Seq(havingKeys.replace("sum(v)", "sum(CAST(v AS DOUBLE))"), havingKeys.replace("sum(v) > 419780", "first(v) > 0"))
          .foreach { sub =>
        val df = checkAnswerAgainstVanilla(sql(s"SELECT f.k, f.v FROM fact_unsorted f WHERE f.k IN ($sub)"))
        assert(filters(df).isEmpty, s"$sub\n${df.queryExecution.executedPlan}")
        val text = DynamicFilterExplain(df.queryExecution.executedPlan).mkString("\n")
        assert(text.contains("nor an aggregate over one whose keys a job can compute again alike"), text)
      }
    }
  }

  test("AQE: a creation side of more rows than maxInSetSize but few distinct keys still gets the exact set") {
    // the stage's row count (80) sends the keys through the one-pass path, which also fills a bloom filter
    withDynamicFilters("spark.sieve.dynamicFilter.maxInSetSize" -> "10", "spark.sql.adaptive.enabled" -> "true",
        "spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      val df = checkAnswerAgainstVanilla(sql(
        "SELECT f.v, c.v AS w FROM fact f JOIN (SELECT k, v FROM fact WHERE v % 1000 < 2) c ON f.k = c.k"))
      val Seq(f) = filters(df)
      assert(f.filterDescription(0).startsWith("in-set of 4 keys"), f.filterDescription(0))
      assert(metric(f, "numOutputRows") === 80)
    }
  }

  test("explain shows the filter with its keys") {
    withDynamicFilters() {
      views(spark)
      val text = spark.sql(starJoin).queryExecution.explainString(org.apache.spark.sql.execution.ExtendedMode)
      assert(text.contains("DynamicFilter [k#"), text)
    }
  }

  test("formatted explain (the UI's, made at each of AQE's plans) prints a filter's keys and sources, not its creation side's tree") {
    withDynamicFilters() {
      views(spark)
      val df = spark.sql(starJoin)
      df.collect()
      val text = df.queryExecution.explainString(org.apache.spark.sql.execution.FormattedMode)
      val arguments = text.linesIterator.dropWhile(!_.contains(") DynamicFilter")).drop(1)
        .find(_.startsWith("Arguments:")).getOrElse(fail(text))
      assert(arguments.matches("""Arguments: .*\[k#\d+L?\] from \[k#\d+L?\] \(broadcast\).*"""), arguments)
      assert(!arguments.contains("Exchange") && !arguments.contains("Scan"), arguments)
    }
  }

  /** The star join over [[KeyRangeSource]] (40,000 rows, 40 input partitions of 1,000 keys) and `dim`: keys
   * 100..119 and 1,960..1,979, in its first two partitions. */
  private def rangedJoin(s: SparkSession): DataFrame = {
    views(s)
    s.read.format(classOf[KeyRangeSource].getName).option("rows", "40000").option("perPartition", "1000").load()
      .createOrReplaceTempView("ranged")
    s.sql("SELECT r.k, r.v, d.cat FROM ranged r JOIN dim d ON r.k = d.k WHERE d.grp IN (5, 98)")
  }

  private def rangedScans(df: DataFrame) = collectWithSubqueries(df.queryExecution.executedPlan) {
    case s: org.apache.spark.sql.execution.datasources.v2.BatchScanExec => s
  }

  testWithAndWithoutAqe("a V2 source's own runtime filtering gets the keys where DPP does not: its other partitions never start") {
    withDynamicFilters("spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      // a sort-merge join: DPP (on) keeps its filter only to reuse a broadcast, and there is none
      val df = checkAnswerAgainstVanilla(rangedJoin)
      val Seq(f) = filters(df)
      assert(f.filterDescription(0).contains("handed to the source's runtime filtering: 38 of 40 input partitions skipped"),
        f.filterDescription(0))
      assert(metric(f, "numInputRows") === 2000 && metric(f, "numOutputRows") === 40)
      // (the plan's scan: its filtered copy, made as the filter runs, reads the same scan, which Spark's DPP too filters in place)
      val handed = rangedScans(df).map(_.scan).collect { case k: KeyRangeScan => k.handed.map(_.name()) }
      assert(handed === Seq(Seq("IN")), rangedScans(df))
    }
    withDynamicFilters("spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1", "spark.sieve.dynamicFilter.pushdownInSetSize" -> "2") {
      // more keys than pushdownInSetSize: their least and greatest, [100, 1979], still in the first two partitions
      val df = checkAnswerAgainstVanilla(rangedJoin)
      val Seq(f) = filters(df)
      assert(f.filterDescription(0).contains("38 of 40 input partitions skipped"), f.filterDescription(0))
      val handed = rangedScans(df).map(_.scan).collect { case k: KeyRangeScan => k.handed.map(_.toString) }
      assert(handed.flatten.sorted === Seq("k <= 1979", "k >= 100"), handed)
    }
  }

  testWithAndWithoutAqe("a V2 source's partition column under a broadcast join stays DPP's") {
    withDynamicFilters("spark.sql.autoBroadcastJoinThreshold" -> "10485760") {
      val df = checkAnswerAgainstVanilla(rangedJoin)
      assert(filters(df).isEmpty, df.queryExecution.executedPlan)
      assert(rangedScans(df).exists(_.runtimeFilters.exists(_.isInstanceOf[
        org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression])), df.queryExecution.executedPlan)
    }
  }

  testWithAndWithoutAqe("the testing switch filters rows made in memory: a Dataset of case classes, a local relation") {
    // Spark's own suites read tables like these (`testData`: an RDD of case classes under SerializeFromObject)
    val pairs = (0 until 2000).map(i => DynamicFilterSuite.KeyValue(i % 200, i.toString))
    def inMemory(s: SparkSession): DataFrame = {
      import s.implicits._
      s.sparkContext.parallelize(pairs, 2).toDF().createOrReplaceTempView("kv_rdd")
      pairs.take(50).toDF().createOrReplaceTempView("kv_local")
      s.sql("SELECT r.key, r.value, l.value FROM kv_rdd r JOIN kv_local l ON r.key = l.key WHERE l.value < '2'")
    }
    withConf("spark.sieve.testing.placeEveryFilter" -> "true", "spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      val df = checkAnswerAgainstVanilla(inMemory)
      val targets = filters(df).map(f => FilterPlans.scanOf(f.child).nodeName)
      assert(targets.contains("SerializeFromObject"), df.queryExecution.executedPlan)
      val kept = filters(df).filter(f => FilterPlans.scanOf(f.child).nodeName == "SerializeFromObject")
      assert(kept.map(metric(_, "numOutputRows")).sum < 2000, df.queryExecution.executedPlan)
    }
    // not without the switch: a filter on rows already in memory saves no read
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "-1") {
      assert(filters(checkAnswerAgainstVanilla(inMemory)).isEmpty)
    }
  }
}

object DynamicFilterSuite {
  case class KeyValue(key: Int, value: String)
}
