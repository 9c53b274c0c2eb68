package sieve.dynamicfilter

import java.nio.file.Files

import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.adaptive.BroadcastQueryStageExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.internal.SQLConf

import sieve.SieveSessionSuite

/** What [[ProbeFanout]] expects a broadcast join to make of each probed row, once its broadcast is built: its
 * build rows and distinct keys against the scan's footers on the probed key. */
class ProbeFanoutSuite extends SieveSessionSuite {
  private lazy val dir = Files.createTempDirectory("sieve-fanout").toFile

  /** fact: 40,000 rows, k in [0, 2000) in every row group; build sides: pairs (2 rows a k of [0, 2000)), half
   * (1 row a k of [0, 1000)), beyond (3 rows a k of [1000, 3000)). */
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(40000).selectExpr("CAST(id % 2000 AS INT) AS k", "id AS v").write.parquet(s"$dir/fact")
    spark.range(4000).selectExpr("CAST(id % 2000 AS INT) AS k").write.parquet(s"$dir/pairs")
    spark.range(1000).selectExpr("CAST(id AS INT) AS k").write.parquet(s"$dir/half")
    spark.range(6000).selectExpr("CAST(1000 + id % 2000 AS INT) AS k").write.parquet(s"$dir/beyond")
    Seq("fact", "pairs", "half", "beyond").foreach(t => spark.read.parquet(s"$dir/$t").createOrReplaceTempView(t))
  }

  /** What ProbeFanout expects `build`'s broadcast join (inner, or else semi) to make of each of fact's rows. */
  private def fanout(build: String, inner: Boolean): Option[Double] =
    withConf("spark.sql.adaptive.enabled" -> "true", "spark.sieve.enabled" -> "false") {
      val df = spark.sql(s"SELECT /*+ BROADCAST(b) */ f.v FROM fact f JOIN $build b ON f.k = b.k")
      df.collect()
      val plan = df.queryExecution.executedPlan
      val Seq(stage) = collect(plan) { case s: BroadcastQueryStageExec => s }
      val Seq(join) = collect(plan) { case j: BroadcastHashJoinExec => j }
      val scan = collect(plan) { case s: FileSourceScanExec if s.relation.location.rootPaths.head.getName == "fact" => s }.head
      ProbeFanout(scan, Seq(KeyLineage.Probe(stage, join.rightKeys, join.leftKeys, inner)), 32, SQLConf.get)
    }

  private def assertNear(actual: Option[Double], expected: Double) =
    assert(actual.exists(a => math.abs(a - expected) < 1e-9), s"$actual, not $expected")

  test("an inner join makes as many rows of a matched row as its key has build rows; a semi join one") {
    assertNear(fanout("pairs", inner = true), 2.0)
    assertNear(fanout("pairs", inner = false), 1.0)
  }

  test("rows whose key the build side's range leaves out match nothing") {
    // half's keys cover half of fact's range, one row each; beyond's the upper half, three rows each
    assertNear(fanout("half", inner = true), 0.5)
    assertNear(fanout("beyond", inner = true), 1.5)
    assertNear(fanout("beyond", inner = false), 0.5)
  }

  test("not known before the broadcast is built, nor for a key of several columns") {
    withConf("spark.sql.adaptive.enabled" -> "true") {
      val df = spark.sql("SELECT /*+ BROADCAST(b) */ f.v FROM fact f JOIN pairs b ON f.k = b.k")
      val planned = df.queryExecution.executedPlan // AQE's plan before it runs: no stage built
      val join = planned.collectFirst { case a: org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec =>
        a.inputPlan.collectFirst { case j: BroadcastHashJoinExec => j }.get }.get
      val scan = join.left.collectFirst { case s: FileSourceScanExec => s }.get
      assert(ProbeFanout(scan, Seq(KeyLineage.Probe(join.right, join.rightKeys, join.leftKeys, inner = true)), 32,
        SQLConf.get).isEmpty)
      df.collect()
      val built = collect(df.queryExecution.executedPlan) { case s: BroadcastQueryStageExec => s }.head
      val two = join.leftKeys ++ join.leftKeys
      assert(ProbeFanout(scan, Seq(KeyLineage.Probe(built, join.rightKeys ++ join.rightKeys, two, inner = true)), 32,
        SQLConf.get).isEmpty)
    }
  }
}
