package sieve.bulkfilter

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{Deduplicate, Distinct, LogicalPlan}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

import sieve.SieveSessionSuite
import sieve.bulkfilter.BulkFilters._
import sieve.errors.{SieveColumnException, SieveSourceException, SieveTreeException}
import sieve.ordering._

/** Bulk filters against vanilla Spark's EXISTS / NOT EXISTS formulation of the same tree. */
class BulkFilterSuite extends SieveSessionSuite {
  private lazy val dir: Path = Files.createTempDirectory("sieve-bulk")

  private def textFile(name: String, lines: String*): String = {
    val p = dir.resolve(name)
    Files.write(p, lines.mkString("", "\n", "\n").getBytes(UTF_8))
    p.toString
  }

  /** Cars with exact duplicate rows and NULL keys. */
  private def cars(s: SparkSession): DataFrame = s.sql(
    """SELECT * FROM VALUES
      |  (1, 'red', 'BMW', 'ASIA', 2001), (1, 'red', 'BMW', 'ASIA', 2001), (2, 'blue', 'Tata', 'NA', 2005),
      |  (3, 'green', 'Hyundai', 'EUROPE', 2010), (4, NULL, 'BMW', 'NA', 2010), (5, 'silver', NULL, 'ASIA', NULL),
      |  (6, 'gold', 'Kia', 'AFRICA', 1999), (6, 'gold', 'Kia', 'AFRICA', 1999), (7, 'blue', 'Hyundai', 'ASIA', 2020),
      |  (8, 'white', 'Tata', 'EUROPE', 2001), (9, 'yellow', 'Ford', NULL, 2005), (10, 'grey', 'BMW', 'NA', 2015)
      |  AS cars(id, color, brand, region, year)""".stripMargin)

  // The seed's cars example: A, B on color, C on brand, D on region.
  private lazy val colorsA = textFile("colors_a.txt", "green", "blue", "white", "grey", "silver", "gold", "yellow")
  private lazy val colorsB = textFile("colors_b.csv", "name,color", "x,blue", "y,green", "z,silver")
  private lazy val brands = {
    val p = dir.resolve("brands.parquet").toString
    vanilla.createDataFrame(Seq(Tuple1("BMW"), Tuple1("Hyundai"), Tuple1("Tata"), Tuple1(null: String)))
      .toDF("brand").write.parquet(p)
    p
  }
  private lazy val regions = {
    val p = dir.resolve("regions.json").toString
    vanilla.createDataFrame(Seq(("ASIA", 1), ("NA", 2), ("EUROPE", 3))).toDF("region", "n").coalesce(1).write.json(p)
    p
  }
  private lazy val years = textFile("years.txt", "2001", "2010", "2020")
  private lazy val empty = textFile("empty.txt")

  private def A = include("color", colorsA)
  private def B = leaf(include = true, "color", PathSource(colorsB, None), Some("color"))
  private def C = include("brand", brands)
  private def D = leaf(include = true, "region", PathSource(regions, None), Some("region"))

  /** Vanilla Spark's formulation: each leaf an EXISTS / NOT EXISTS over the same values. */
  private def existsQuery(tree: Tree): SparkSession => DataFrame = { s =>
    cars(s).createOrReplaceTempView("cars")
    var n = 0
    def sql(t: Tree): String = t match {
      case Leaf(l) =>
        n += 1
        val raw = l.source match {
          case PathSource(p, _) => ValueSources.read(s, ValueSources.resolve(s, p, None).format, Seq(p))
          case f: FrameSource => f.frame
        }
        // the values as they are: Spark's own `=` decides how they meet the key
        raw.selectExpr(s"`${l.valueColumn.getOrElse(raw.columns.head)}` AS value").createOrReplaceTempView(s"v$n")
        s"${if (l.include) "" else "NOT "}EXISTS (SELECT 1 FROM v$n WHERE v$n.value = cars.${l.column})"
      case node: Node[LeafSpec] => node.children.map(sql).mkString("(", s" ${node.opName.toUpperCase} ", ")")
    }
    s.sql(s"SELECT * FROM cars WHERE ${sql(tree)}")
  }

  private val AlwaysJoins = "spark.sieve.bulkFilter.maxSetBytes" -> "0"

  /** Answer equal to vanilla's EXISTS query, one BulkFilter in the analyzed plan, and in the optimized
   * plan ONE SetFilter (a value set per key column) and no join; with maxSetBytes=0, the same answer with
   * one join per key column instead. No DISTINCT anywhere. */
  private def checkTree(tree: Tree): DataFrame = {
    checkJoins(tree)
    checkSets(tree)
  }

  private def check(tree: Tree): DataFrame = {
    val df = checkAnswerAgainstVanilla(s => if (s eq spark) tree.applyTo(cars(s)) else existsQuery(tree)(s))
    assert(df.queryExecution.analyzed.collect { case b: BulkFilter => b }.size === 1)
    val optimized = df.queryExecution.optimizedPlan
    assert(optimized.collect { case b: BulkFilter => b }.isEmpty)
    assert(optimized.collect { case d @ (_: Distinct | _: Deduplicate) => d }.isEmpty)
    df
  }

  private def checkSets(tree: Tree): DataFrame = {
    val df = check(tree)
    val optimized = df.queryExecution.optimizedPlan
    assert(inputJoins(optimized).isEmpty, optimized.treeString)
    assert(setFilters(optimized).map(_.sets.map(_.column).toSet) === Seq(tree.leaves.map(_.column).toSet),
      optimized.treeString)
    df
  }

  private def checkJoins(tree: Tree): DataFrame = withConf(AlwaysJoins) {
    val df = check(tree)
    val optimized = df.queryExecution.optimizedPlan
    assert(inputJoins(optimized).size === tree.leaves.map(_.column).distinct.size, optimized.treeString)
    assert(setFilters(optimized).isEmpty)
    df
  }

  private def setFilters(plan: LogicalPlan): Seq[SetFilter] = plan.collect { case f: SetFilter => f }

  /** The order the key columns are tested in: value sets (in the tree's order), or joins. */
  private def joinOrder(df: DataFrame): Seq[String] = joinOrder(df.queryExecution.optimizedPlan)
  private def setOrder(df: DataFrame): Seq[String] =
    setFilters(df.queryExecution.optimizedPlan).flatMap(_.sets.map(_.column))

  private val SeedModel = "spark.sieve.bulkFilter.costModel" -> "seed"

  /** Both ways of running `tree` test its key columns in `expected` order. */
  private def checkOrder(tree: Tree, expected: Seq[String]): DataFrame = {
    assert(joinOrder(checkJoins(tree)) === expected)
    val df = checkSets(tree)
    assert(setOrder(df) === expected)
    df
  }

  testWithAndWithoutAqe("the seed's example (D) or ((C) and (A and B)) runs as (((A and B) and C) or D)") {
    val tree = anyOf(D, allOf(C, allOf(A, B)))
    withConf(SeedModel) {
      val df = checkOrder(tree, Seq("color", "brand", "region"))
      assert(PythonFacadeText.asRun(df) ===
        s"(((include(color, $colorsA) and include(color, $colorsB)) and include(brand, $brands)) or include(region, $regions))")
    }
  }

  testWithAndWithoutAqe("the seed's example (a or b) and c and (d or f) runs c first") {
    val tree = allOf(anyOf(A, B), C, anyOf(D, exclude("year", years)))
    withConf(SeedModel)(checkOrder(tree, Seq("brand", "color", "region", "year")))
  }

  testWithAndWithoutAqe("exclude keeps NULL keys; NULLs among the values match nothing") {
    checkTree(exclude("brand", brands))          // brands holds a NULL: keeps the NULL-brand car anyway
    checkTree(include("brand", brands))          // ... and it does not make NULL brands match
    checkTree(exclude("color", colorsA) | exclude("region", colorsB))
  }

  testWithAndWithoutAqe("duplicate input rows survive exactly, under AND and OR") {
    val df = checkTree(anyOf(D, allOf(include("color", colorsA), exclude("brand", brands))))
    assert(df.where("id = 6").count() === 2)
  }

  testWithAndWithoutAqe("empty value set: include keeps nothing, exclude keeps everything") {
    assert(checkTree(include("color", empty)).count() === 0)
    assert(checkTree(exclude("color", empty)).count() === 12)
  }

  testWithAndWithoutAqe("values are cast to the key column's type") {
    checkTree(include("year", years) | D)
  }

  test("a value that cannot be cast fails the query under ANSI naming the file, the value and the column") {
    val bad = textFile("bad_years.txt", "2001", "twenty", "2010")
    // Spark's `year = value` compares an INT with a string as BIGINT under ANSI, and fails on `twenty`
    val message = s"value 'twenty' in $bad cannot be cast to BIGINT for column 'year'"
    withConf("spark.sql.ansi.enabled" -> "true") {
      // a value set reads the file itself: a typed error
      val e = intercept[SieveSourceException](include("year", bad).applyTo(cars(spark)).collect())
      assert(e.getMessage.contains(message) && e.source.endsWith("bad_years.txt"))
      withConf(AlwaysJoins)(assert(intercept[Exception](include("year", bad).applyTo(cars(spark)).collect())
        .getMessage.contains(message)))
    }
    // without ANSI, the value is NULL and matches nothing, as in Spark's `=`
    withConf("spark.sql.ansi.enabled" -> "false")(checkTree(include("year", bad)))
  }

  private def scannedFiles(plan: LogicalPlan): Seq[String] = plan.collectLeaves().collect {
    case l: LogicalRelation => l.relation match { case h: HadoopFsRelation => h.location.rootPaths.map(_.getName) }
  }.flatten.sorted

  test("a source used by several leaves is read once per key column") { withConf(SeedModel) { // leaves in written order
    def df = (include("color", colorsA) & exclude("color", colorsA) | include("color", colorsB)).applyTo(cars(spark))
    val bf = df.queryExecution.analyzed.collect { case b: BulkFilter => b }.head
    assert(bf.sources.size === 2)
    // value sets: the text file read directly once, for both its leaves (mask 0b11); the csv by a scan
    val optimized = df.queryExecution.optimizedPlan
    assert(setFilters(optimized).flatMap(_.textFiles).map(f => (f.path.split('/').last, f.targets.map(t => (t.set, t.mask)))) ===
      Seq(("colors_a.txt", Seq((0, Seq(3L))))))
    assert(scannedFiles(optimized) === Seq("colors_b.csv"))
    withConf(AlwaysJoins)(assert(scannedFiles(df.queryExecution.optimizedPlan) === Seq("colors_a.txt", "colors_b.csv")))
  }}

  testWithAndWithoutAqe("text files are read as Spark's text source reads them: line ends, a byte order mark, gzip, splits") {
    def write(name: String, bytes: Array[Byte]): String = { val p = dir.resolve(name); Files.write(p, bytes); p.toString }
    val crlf = write("crlf.txt", "gold\r\nblue\rgreen\n\nred".getBytes(UTF_8))
    val bom = write("bom.txt", ("\uFEFF" + "white\nsilver\n").getBytes(UTF_8))
    val gz = {
      val out = new java.io.ByteArrayOutputStream()
      val z = new java.util.zip.GZIPOutputStream(out)
      z.write("grey\nyellow\n".getBytes(UTF_8))
      z.close()
      write("colors.txt.gz", out.toByteArray)
    }
    val big = write("big.txt", (Seq.tabulate(3000)(i => s"c$i") :+ "Kia" :+ "Ford").mkString("\n").getBytes(UTF_8))
    val tree = anyOf(include("color", crlf), allOf(exclude("color", bom), include("brand", big)), include("color", gz))
    withConf("spark.sql.files.maxPartitionBytes" -> "1000") { // the big file in ~20 splits
      checkTree(tree)
      assert(setFilters(tree.applyTo(cars(spark)).queryExecution.optimizedPlan).flatMap(_.textFiles).size === 4)
    }
  }

  testWithAndWithoutAqe("many text files on one column share one scan; each leaf keeps its own values") {
    val files = (0 until 12).map(i => textFile(s"many dir/part $i.txt".replace("many dir/", "many_"), s"${2000 + i}", s"${2010 + i % 3}"))
    val tree = anyOf(files.grouped(3).map(g => allOf(include("year", g(0)), exclude("year", g(1)) | include("year", g(2)))).toSeq: _*)
    val df = checkTree(tree)
    val bf = df.queryExecution.analyzed.collect { case b: BulkFilter => b }.head
    assert(bf.sources.size === 1)
  }

  test("with reordering off the tree runs in written order; answers do not change") {
    // No top-level leaf: those become semi/anti joins, which Spark itself may push below the others.
    val tree = allOf(anyOf(A, D, B), anyOf(C, exclude("year", years)))
    val written = Seq("color", "region", "brand", "year")
    withConf("spark.sieve.bulkFilter.enabled" -> "false") {
      checkOrder(tree, written)
    }
    withConf("spark.sieve.enabled" -> "false") {
      checkOrder(tree, written)
    }
    withConf(SeedModel)(checkOrder(tree, Seq("brand", "year", "color", "region")))
  }

  testWithAndWithoutAqe("joined top-level single-leaf columns run as semi / anti joins, others as existence joins") {
    checkSets(allOf(C, exclude("year", years), anyOf(A, D)))
    val df = checkJoins(allOf(C, exclude("year", years), anyOf(A, D)))
    val types = inputJoins(df.queryExecution.optimizedPlan).map(_.joinType.toString).sorted
    assert(types.count(_ == "LeftSemi") === 1 && types.count(_ == "LeftAnti") === 1, types)
    assert(types.count(_.startsWith("ExistenceJoin")) === 2, types)
  }

  testWithAndWithoutAqe("the stats model joins the most selective column first and shows its estimates") {
    val oneBrand = textFile("one_brand.txt", "Kia")
    val tree = allOf(exclude("color", textFile("no_color.txt", "purple")), include("brand", oneBrand))
    withConf("spark.sieve.bulkFilter.costModel" -> "stats") {
      val df = checkOrder(tree, Seq("brand", "color"))
      val text = sieve.api.PythonFacade.explainBulkFilters(df)
      assert(text.contains("cost model: stats"), text)
      assert(text.matches("(?s).*include\\(brand, [^)]*\\)\\[s=0\\.1\\d* c=.*"), text)
    }
    withConf(SeedModel)(checkOrder(tree, Seq("color", "brand")))  // seed: ties keep the written order
  }

  /** 40,000 rows, k in [0, 2000) sorted, in row groups of ~100 keys; v = k % 7. */
  private lazy val sortedFacts = {
    val p = dir.resolve("sorted_facts").toString
    vanilla.range(40000).selectExpr("CAST(id % 2000 AS INT) AS k", "CAST(id % 2000 % 7 AS INT) AS v", "id")
      .orderBy("k").coalesce(1).write.option("parquet.block.size", 16384).parquet(p)
    p
  }

  private def setFilterExecs(df: DataFrame): Seq[SetFilterExec] = {
    val helper = new org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper {}
    helper.collect(df.queryExecution.executedPlan) { case f: SetFilterExec => f }
  }

  private def scanRows(df: DataFrame): Long = {
    val helper = new org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper {}
    helper.collect(df.queryExecution.executedPlan) {
      case s: org.apache.spark.sql.execution.FileSourceScanExec => s.metrics("numOutputRows").value
    }.sum
  }

  testWithAndWithoutAqe("a root include leaf's values are pushed into the Parquet scan: row groups are skipped") {
    val keys = textFile("few_keys.txt", "5", "6", "1500", "1501")
    val tree = allOf(include("k", keys), exclude("v", textFile("v_6.txt", "6")))
    val df = checkAnswerAgainstVanilla(s =>
      if (s eq spark) tree.applyTo(s.read.parquet(sortedFacts))
      else s.read.parquet(sortedFacts).where("k IN (5, 6, 1500, 1501) AND v != 6"))
    assert(df.count() === 60)
    val f = setFilterExecs(df).head
    assert(f.setsDescription.exists(_.startsWith("pushed to scan")), f.setsDescription)
    assert(scanRows(df) < 40000 / 4, "the pushed IN-set and ranges should skip most row groups")
    // an exclude leaf, or an include under an OR, pushes nothing: every row is read
    val notPushed = (exclude("k", keys) | include("v", keys)).applyTo(spark.read.parquet(sortedFacts))
    notPushed.collect()
    assert(!setFilterExecs(notPushed).head.setsDescription.exists(_.startsWith("pushed to scan")))
    assert(scanRows(notPushed) >= 40000) // (and the value files' rows)
  }

  testWithAndWithoutAqe("adaptive order: the tasks move the rejecting child of an AND first; answers as without") {
    // written in the wrong order: the first leaf keeps every row, the second one row in seven
    val allKeys = textFile("all_keys.txt", (0 until 2000).map(_.toString): _*)
    val three = textFile("three.txt", "3")
    val tree = allOf(include("k", allKeys), include("v", three))
    val expected = (s: SparkSession) => s.read.parquet(sortedFacts).where("v = 3")
    withConf("spark.sieve.bulkFilter.adaptiveOrder" -> "false") {
      checkAnswerAgainstVanilla(s => if (s eq spark) tree.applyTo(s.read.parquet(sortedFacts)) else expected(s))
    }
    val df = withConf("spark.sieve.bulkFilter.adaptiveOrder" -> "true") {
      checkAnswerAgainstVanilla(s => if (s eq spark) tree.applyTo(s.read.parquet(sortedFacts)) else expected(s))
    }
    val text = sieve.api.PythonFacade.explainBulkFilters(df)
    // pass rates as measured on the sampled rows (1 in 7 of all rows)
    assert(text.contains(s"settled:    (include(v, $three)[pass 0.1"), text)
    assert(text.contains(s"include(k, $allKeys)[pass 1.00])"), text)
  }

  test("bad trees fail at apply(), naming the file, column or node") {
    val missing = dir.resolve("nope.txt").toString
    assert(intercept[SieveSourceException](include("color", missing).applyTo(cars(spark))).getMessage ===
      s"$missing: no such file or directory")
    assert(intercept[SieveColumnException](include("colour", colorsA).applyTo(cars(spark))).getMessage ===
      "column 'colour': not a column of the input (its columns: id, color, brand, region, year)")
    assert(intercept[SieveTreeException](allOf(A, anyOf()).applyTo(cars(spark))).getMessage ===
      "filter tree at root.and[1]: empty OR: it needs at least one child")
    val odd = textFile("values.xyz", "a")
    assert(intercept[SieveSourceException](include("color", odd).applyTo(cars(spark))).getMessage
      .startsWith(s"$odd: cannot tell its format from the file name; pass format="))
    val wrongColumn = leaf(include = true, "color", PathSource(colorsB, None), Some("colour"))
    assert(intercept[SieveColumnException](wrongColumn.applyTo(cars(spark))).getMessage ===
      s"column 'colour': not a column of $colorsB (its columns: name, color)")
  }

  testWithAndWithoutAqe("sieve_bulk_filter(TABLE(t), json, TABLE(source)) in SQL is tree.apply") {
    val json =
      s"""{"op": "or", "children": [
         |  {"op": "include", "column": "region", "source": {"path": "$regions"}, "value_column": "region"},
         |  {"op": "and", "children": [
         |    {"op": "include", "column": "brand", "source": {"dataframe": 0}},
         |    {"op": "exclude", "column": "color", "source": {"path": "$colorsB"}, "value_column": "color"}]}]}""".stripMargin
    spark.read.parquet(brands).createOrReplaceTempView("brands_t")
    // (the reference reads the same brands from their file: a DataFrame of this session is not the vanilla one's)
    val tree = anyOf(D, allOf(C, leaf(include = false, "color", PathSource(colorsB, None), Some("color"))))
    val df = checkAnswerAgainstVanilla { s =>
      if (s eq spark) {
        cars(s).createOrReplaceTempView("cars")
        s.sql(s"SELECT * FROM sieve_bulk_filter(TABLE(cars), '$json', TABLE(brands_t))")
      } else existsQuery(tree)(s)
    }
    assert(df.queryExecution.analyzed.collect { case b: BulkFilter => b }.size === 1)
    assert(df.queryExecution.optimizedPlan.collect { case b: BulkFilter => b }.isEmpty)
    assert(df.collect().toSet === tree.applyTo(cars(spark)).collect().toSet)
    def error(sql: String) = intercept[SieveTreeException](spark.sql(sql)).getMessage
    assert(error("SELECT * FROM sieve_bulk_filter(TABLE(cars), '{\"op\": \"or\", \"children\": []}')") ===
      "filter tree at root: empty OR: it needs at least one child")
    assert(error("SELECT * FROM sieve_bulk_filter(TABLE(cars), 1)") ===
      "filter tree at sieve_bulk_filter argument 2: the tree's JSON must be a string literal, not 1")
    assert(error("SELECT * FROM sieve_bulk_filter(TABLE(cars))").contains("got 1 argument(s)"))
  }

  test("JSON trees parse to the same tree the builder makes") {
    val json =
      s"""{"op": "or", "children": [
         |  {"op": "include", "column": "region", "source": {"path": "$regions"}, "value_column": "region"},
         |  {"op": "and", "children": [
         |    {"op": "include", "column": "brand", "source": {"path": "$brands", "format": "parquet"}},
         |    {"op": "exclude", "column": "color", "source": {"path": "$colorsB"}, "value_column": "color"}]}]}""".stripMargin
    val expected = anyOf(D, allOf(leaf(include = true, "brand", PathSource(brands, Some("parquet")), None),
      leaf(include = false, "color", PathSource(colorsB, None), Some("color"))))
    assert(FilterTreeJson.parse(json) === expected)
    // what Python's from_json is given back: the same tree, in to_json's one form
    assert(FilterTreeJson.parse(FilterTreeJson.canonical(json)) === expected)
    assert(FilterTreeJson.canonical("""{"op": "AND", "children": [{"op": "include", "column": "c", "x": 1,
      |"source": {"path": "p", "format": "CSV"}}]}""".stripMargin) ===
      """{"op":"and","children":[{"op":"include","column":"c","source":{"path":"p","format":"CSV"}}]}""")
    assert(intercept[SieveTreeException](FilterTreeJson.parse("""{"op": "xor", "children": []}""")).getMessage ===
      "filter tree at root: unknown op 'xor' (expected and, or, include, exclude)")
  }
}

/** The chosen order as text, read back from the node the way explain shows it. */
private object PythonFacadeText {
  def asRun(df: DataFrame): String = {
    val bf = df.queryExecution.analyzed.collect { case b: BulkFilter => b }.head
    BulkFilterOrder.chosenTree(bf, df.sparkSession.sessionState.conf).render(bf.labels)
  }
}
