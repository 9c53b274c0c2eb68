package sieve

import org.apache.spark.SparkConf
import org.apache.spark.sql.{DataFrame, Row, SparkSession, VanillaSession}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * One local[2] SparkContext per suite with two sessions over it: `spark` has spark-sieve and
 * `vanilla` has no extension at all. (The extension is passed to the builder rather than through
 * `spark.sql.extensions`, which every session of the context would pick up; the Python tests cover
 * the `spark.sql.extensions` path.)
 * Feature tests compare answers against `vanilla` and then assert the plan shape (Comet's
 * checkSparkAnswerAndOperator pattern).
 */
abstract class SieveSessionSuite extends AnyFunSuite with BeforeAndAfterAll with AdaptiveSparkPlanHelper {

  protected def sparkConf: SparkConf = new SparkConf()
    .setMaster("local[2]")
    .setAppName(getClass.getSimpleName)
    .set("spark.ui.enabled", "false")
    .set("spark.sql.shuffle.partitions", "4")
    .set("spark.sql.codegen.fallback", "false") // code that does not compile fails, not runs interpreted
    .set("spark.driver.host", "127.0.0.1")

  protected lazy val spark: SparkSession =
    SparkSession.builder().config(sparkConf).withExtensions(new SieveExtensions).getOrCreate()

  protected lazy val vanilla: SparkSession = VanillaSession.over(spark.sparkContext)

  override protected def afterAll(): Unit = {
    try SparkSession.getDefaultSession.foreach(_.stop())
    finally super.afterAll()
  }

  /** Sets `spark.sieve.*` (or any SQL) settings on both sessions for the length of `body`. */
  protected def withConf[T](pairs: (String, String)*)(body: => T): T = {
    val sessions = Seq(spark, vanilla)
    val old = sessions.map(s => pairs.map { case (k, _) => k -> s.conf.getOption(k) })
    sessions.foreach(s => pairs.foreach { case (k, v) => s.conf.set(k, v) })
    try body
    finally sessions.zip(old).foreach { case (s, kvs) =>
      kvs.foreach { case (k, Some(v)) => s.conf.set(k, v); case (k, None) => s.conf.unset(k) }
    }
  }

  /** Runs `query` on both sessions and asserts the same rows, in any order; returns sieve's frame. */
  protected def checkAnswerAgainstVanilla(query: SparkSession => DataFrame): DataFrame = {
    val df = query(spark)
    val expected = query(vanilla).collect().toSeq
    assertSameRows(df.collect().toSeq, expected)
    df
  }

  protected def assertSameRows(actual: Seq[Row], expected: Seq[Row]): Unit = {
    def sorted(rows: Seq[Row]) = rows.map(_.toString).sorted
    assert(sorted(actual) === sorted(expected), "answers differ from vanilla Spark")
  }

  /** A plan's text with expression ids blanked, so plans of two sessions compare (PlanTest style). */
  protected def normalized(plan: org.apache.spark.sql.catalyst.trees.TreeNode[_]): String =
    plan.toString.replaceAll("#\\d+", "#x")

  /** The joins down the plan's left spine, top down: the input's joins with value tables or
   * subqueries, not the joins inside those. */
  protected def inputJoins(plan: LogicalPlan): Seq[Join] = plan match {
    case j: Join => j +: inputJoins(j.left)
    case p if p.children.nonEmpty => inputJoins(p.children.head)
    case _ => Nil
  }

  /** The input column each of those joins matches on, innermost join first. */
  protected def joinOrder(plan: LogicalPlan): Seq[String] =
    inputJoins(plan).reverse.map(j => j.condition.get.references.filter(j.left.outputSet.contains).head.name)

  /** Runs the same test body with adaptive query execution on and off; the AQE-off run only in the full tier
   * (`SIEVE_TESTS=full`: `dev/test --full`, CI; tests/tiers.py is the Python side), ignored in the quick one. */
  protected def testWithAndWithoutAqe(name: String)(body: => Unit): Unit =
    Seq("true", "false").foreach { aqe =>
      def run = withConf("spark.sql.adaptive.enabled" -> aqe)(body)
      if (aqe == "true" || SieveSessionSuite.fullTier) test(s"$name (AQE=$aqe)")(run)
      else ignore(s"$name (AQE=$aqe)")(run)
    }
}

object SieveSessionSuite {
  /** The full test tier: `SIEVE_TESTS=full` in the environment sbt's forked test JVM inherits. */
  val fullTier: Boolean = sys.env.get("SIEVE_TESTS").contains("full")
}
