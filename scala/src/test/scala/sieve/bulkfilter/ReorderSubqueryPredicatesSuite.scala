package sieve.bulkfilter

import org.apache.spark.sql.{DataFrame, SparkSession}

import sieve.SieveSessionSuite
import sieve.ordering._

/** Ordinary EXISTS / IN (subquery) filters, ordered with the seed model: answers vs vanilla, join order. */
class ReorderSubqueryPredicatesSuite extends SieveSessionSuite {

  private def views(s: SparkSession): Unit = {
    val rows = ((0L until 200L) ++ (0L until 20L)).map(i => (i, i % 7, i % 11, i % 13)) // with duplicates
    s.createDataFrame(rows).toDF("id", "k1", "k2", "k3").createOrReplaceTempView("t")
    s.range(0, 4).selectExpr("id AS v").createOrReplaceTempView("a")
    s.range(2, 9).selectExpr("id AS v").createOrReplaceTempView("b")
    s.range(5, 6).selectExpr("id AS v").createOrReplaceTempView("c")
  }

  private def query(sql: String): SparkSession => DataFrame = { s => views(s); s.sql(sql) }

  private val orFirst =
    """SELECT * FROM t WHERE EXISTS (SELECT 1 FROM c WHERE c.v = t.k3)
      |  OR (t.k2 IN (SELECT v FROM b) AND EXISTS (SELECT 1 FROM a WHERE a.v = t.k1))""".stripMargin

  testWithAndWithoutAqe("an OR of a subquery and an AND of subqueries runs the AND first") {
    val df = checkAnswerAgainstVanilla(query(orFirst))
    assert(joinOrder(df.queryExecution.optimizedPlan) === Seq("k2", "k1", "k3"))
    assert(joinOrder(vanilla.sql(orFirst).queryExecution.optimizedPlan) === Seq("k3", "k2", "k1"))
  }

  test("with reordering off, the written order stays; row-local predicates stay in front") {
    withConf("spark.sieve.subqueryOrder.enabled" -> "false") {
      val df = checkAnswerAgainstVanilla(query(orFirst))
      assert(joinOrder(df.queryExecution.optimizedPlan) === Seq("k3", "k2", "k1"))
    }
    val mixed = checkAnswerAgainstVanilla(query(
      "SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.v = t.k3) OR (t.id > 100 AND t.k1 IN (SELECT v FROM a))"))
    assert(joinOrder(mixed.queryExecution.optimizedPlan) === Seq("k1", "k3"))
  }

  // k1 has 7 distinct values and `a` holds 4 of them; k3 has 13 and `c` holds 1: `c` is far more selective.
  private val twoSizes = "SELECT * FROM t WHERE t.k1 IN (SELECT v FROM a) %s EXISTS (SELECT 1 FROM c WHERE c.v = t.k3)"

  testWithAndWithoutAqe("under the stats model, the more selective subquery runs first in an AND, last in an OR") {
    withConf("spark.sieve.subqueryOrder.costModel" -> "stats") {
      val and = checkAnswerAgainstVanilla(query(twoSizes.format("AND")))
      assert(joinOrder(and.queryExecution.optimizedPlan) === Seq("k3", "k1"))
      val or = checkAnswerAgainstVanilla(query(twoSizes.format("OR")))
      assert(joinOrder(or.queryExecution.optimizedPlan) === Seq("k1", "k3"))
    }
    // the seed model prices every subquery alike: written order
    val seed = checkAnswerAgainstVanilla(query(twoSizes.format("AND")))
    assert(joinOrder(seed.queryExecution.optimizedPlan) === Seq("k1", "k3"))
  }

  test("under the stats model the rule also reaches a fixed point") {
    withConf("spark.sieve.subqueryOrder.costModel" -> "stats") {
      views(spark)
      val once = ReorderSubqueryPredicates(spark.sql(twoSizes.format("AND")).queryExecution.analyzed)
      assert(ReorderSubqueryPredicates(once) eq once)
    }
  }

  testWithAndWithoutAqe("a predicate that can raise, or is nondeterministic, keeps its place and nothing moves past it") {
    // written: the row-local guard first; the seed model would put the cheaper AND (two leaves) first
    // and evaluate 10 / x where x = 0
    val guarded = "SELECT * FROM t WHERE t.k1 = 0 OR (EXISTS (SELECT 1 FROM a WHERE a.v = t.k2) AND 10 / t.k1 > 1)"
    val df = checkAnswerAgainstVanilla(query(guarded))
    assert(normalized(df.queryExecution.optimizedPlan) ===
      normalized(withConf("spark.sieve.subqueryOrder.enabled" -> "false")(spark.sql(guarded).queryExecution.optimizedPlan)))
    val random = "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM c WHERE c.v = t.k3) OR rand(3) < 0.1"
    checkAnswerAgainstVanilla(query(random))
    assert(spark.sql(random).queryExecution.optimizedPlan.toString.indexOf("rand(") >
      spark.sql(random).queryExecution.optimizedPlan.toString.indexOf("exists#"))
  }

  test("the rule reaches a fixed point: a second pass changes nothing") {
    views(spark)
    val optimized = spark.sql(orFirst).queryExecution.optimizedPlan
    val analyzed = spark.sql(orFirst).queryExecution.analyzed
    val once = ReorderSubqueryPredicates(analyzed)
    assert(ReorderSubqueryPredicates(once) eq once)
    assert(optimized.resolved)
  }
}
