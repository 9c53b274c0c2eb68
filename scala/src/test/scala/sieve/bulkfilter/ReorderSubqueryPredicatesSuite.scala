package sieve.bulkfilter

import org.apache.spark.sql.{DataFrame, SparkSession}

import sieve.SieveSessionSuite

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
    withConf("spark.sieve.bulkFilter.enabled" -> "false") {
      val df = checkAnswerAgainstVanilla(query(orFirst))
      assert(joinOrder(df.queryExecution.optimizedPlan) === Seq("k3", "k2", "k1"))
    }
    val mixed = checkAnswerAgainstVanilla(query(
      "SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.v = t.k3) OR (t.id > 100 AND t.k1 IN (SELECT v FROM a))"))
    assert(joinOrder(mixed.queryExecution.optimizedPlan) === Seq("k1", "k3"))
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
