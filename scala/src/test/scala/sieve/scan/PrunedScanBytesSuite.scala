package sieve.scan

import java.nio.file.Files

import org.apache.spark.sql.execution.{FileSourceScanExec, InputAdapter, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{BroadcastQueryStageExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec

import sieve.SieveSessionSuite

/** What a partitioned scan reads once DPP has run, known at planning from a broadcast AQE has built. */
class PrunedScanBytesSuite extends SieveSessionSuite {
  private lazy val dir = Files.createTempDirectory("sieve-pruned").toFile

  /** fact: 8,000 rows partitioned by p in [0, 4); dim: 400 rows, k in [0, 400), grp = k % 100. */
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(8000).selectExpr("CAST(id % 400 AS INT) AS k", "id AS v", "CAST(id % 4 AS INT) AS p")
      .write.partitionBy("p").parquet(s"$dir/fact")
    spark.range(400).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS grp").write.parquet(s"$dir/dim")
  }

  test("a DPP broadcast built anywhere in the execution (a stage AQE will put in the exchange's place) counts as built") {
    // dim's grp = 3 keeps k in {3, 103, 203, 303}: DPP on p = k keeps partition 3 of four
    withConf("spark.sql.adaptive.enabled" -> "true", "spark.sieve.enabled" -> "false") {
      spark.read.parquet(s"$dir/fact").createOrReplaceTempView("fact")
      spark.read.parquet(s"$dir/dim").createOrReplaceTempView("dim")
      val df = spark.sql("SELECT sum(v) FROM fact JOIN dim ON fact.p = dim.k WHERE dim.grp = 3")
      df.collect()
      // the join DPP was planned for, as the rules see it when AQE makes its stage (before codegen)
      val plan = collect(df.queryExecution.executedPlan) { case j: BroadcastHashJoinExec => j }.head
        .transform { case i: InputAdapter => i.child }
      val stage = collect(plan) { case s: BroadcastQueryStageExec if s.isMaterialized => s }.head
      val scan = collect(plan) { case s: FileSourceScanExec if s.partitionFilters.nonEmpty => s }.head
      // the same plan with the built stage's exchange in its place, as a subquery's AQE plans a broadcast
      // its query has built (TPC-DS q24)
      val exchange = stage.plan match { case r: ReusedExchangeExec => r.child; case e => e }
      val asExchange = plan.transform { case s if s eq stage => exchange }
      val stages: SparkPlan => Option[QueryStageExec] = { case s: QueryStageExec => Some(s); case _ => None }
      val cached: SparkPlan => Option[QueryStageExec] = p => if (p eq exchange) Some(stage) else stages(p)

      val kept = PrunedScanBytes.whenBuilt(scan, asExchange, cached)
      assert(kept.map(k => (k.files, k.ofFiles)) === PrunedScanBytes.whenBuilt(scan, plan, stages).map(k => (k.files, k.ofFiles)))
      assert(kept.exists(k => k.files > 0 && k.files * 4 <= k.ofFiles), s"$kept\n$plan\n${scan.partitionFilters}")
      assert(PrunedScanBytes.whenBuilt(scan, asExchange, stages).isEmpty)
    }
  }
}

