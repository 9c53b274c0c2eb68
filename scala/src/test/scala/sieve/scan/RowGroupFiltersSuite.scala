package sieve.scan

import java.nio.file.Files

import org.apache.spark.sql.execution.FileSourceScanExec

import sieve.SieveSessionSuite
import sieve.dynamicfilter.FilterPlans

/** The row groups a Parquet scan's own filters leave it to read, by its footers, and the bytes the dynamic-filter
 * rules count for it. */
class RowGroupFiltersSuite extends SieveSessionSuite {
  private lazy val dir = Files.createTempDirectory("sieve-rowgroups").toFile

  /** sorted: 40,000 rows sorted by k in [0, 20000) in small row groups, v not sorted; d a date following k. */
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(40000).selectExpr("CAST(id DIV 2 AS INT) AS k", "pmod(hash(id), 1000) AS v",
      "date_add(DATE'2020-01-01', CAST(id DIV 200 AS INT)) AS d")
      .orderBy("k").coalesce(1).write.option("parquet.block.size", 16384).parquet(s"$dir/sorted")
  }

  private def scanOf(where: String): FileSourceScanExec = {
    spark.read.parquet(s"$dir/sorted").createOrReplaceTempView("sorted")
    collect(spark.sql(s"SELECT k, v FROM sorted WHERE $where").queryExecution.executedPlan) {
      case s: FileSourceScanExec => s
    }.head
  }

  private def share(where: String) = RowGroupFilters.keptShare(scanOf(where), 32, spark.sessionState.conf)

  test("a range of the sorted column keeps the share of rows in the row groups it overlaps") {
    val groups = org.apache.parquet.hadoop.ParquetFileReader.readFooter(spark.sessionState.newHadoopConf(),
      new org.apache.hadoop.fs.Path(new java.io.File(dir, "sorted").listFiles().filter(_.getName.endsWith(".parquet"))
        .head.getPath)).getBlocks.size
    assert(groups >= 10, s"$groups row groups: the test needs many")
    val tenth = share("k >= 1000 AND k < 3000").get
    // 10% of the rows, and at most the two row groups at its ends beyond them
    assert(tenth >= 0.1 && tenth <= 0.1 + 2.0 / groups, s"$tenth of $groups row groups")
    assert(share("k = 5000").exists(s => s > 0 && s <= 2.0 / groups))
    assert(share("k > 30000").contains(0.0))
    // a date column's comparisons too, and the understood one of two (the other may skip more)
    assert(share("d < DATE'2020-01-21'").exists(s => s > 0 && s <= 0.1 + 2.0 / groups))
    assert(share("k < 2000 AND v % 3 = 0").exists(_ <= 0.1 + 2.0 / groups))
  }

  test("no share without a comparison understood; all of it where values are spread over every row group") {
    assert(share("v % 3 = 0").isEmpty)
    assert(share("v < 10").contains(1.0))
  }

  test("the bytes the rules count for a scan are those of the row groups it reads") {
    val whole = FilterPlans.columnBytes(scanOf("v % 3 = 0"))
    assert(FilterPlans.scanBytes(scanOf("v % 3 = 0")) === whole)
    val read = FilterPlans.scanBytes(scanOf("k >= 1000 AND k < 3000"))
    assert(read > 0 && read * 5 < whole, s"$read of $whole")
  }
}
