package sieve

import org.apache.spark.sql.{AnalysisException, ErrorCondition, SparkSession}

import sieve.api.PythonFacade
import sieve.config.BuildInfo
import sieve.errors.SieveConfigException

/** Registration and the master switch, in the style of Spark's SparkSessionExtensionSuite. */
class SieveExtensionsSuite extends SieveSessionSuite {

  private val queries: Seq[SparkSession => org.apache.spark.sql.DataFrame] = Seq(
    s => s.range(0, 100).selectExpr("id", "id % 7 AS k").where("k IN (1, 2)"),
    s => s.range(0, 100).selectExpr("id % 10 AS k").join(s.range(0, 10).withColumnRenamed("id", "k"), "k")
      .groupBy("k").count(),
    s => s.sql("SELECT * FROM range(50) a WHERE EXISTS (SELECT 1 FROM range(5) b WHERE a.id = b.id)"))

  test("the extension is applied to its session and not to a vanilla one") {
    assert(PythonFacade.isRegistered(spark))
    assert(!PythonFacade.isRegistered(vanilla))
    val status = PythonFacade.status(spark)
    assert(status.get("registered") === "true")
    assert(status.get("version") === BuildInfo.version)
    assert(status.get("runningSpark") === spark.version)
    assert(status.get("spark.sieve.enabled") === "true")
  }

  test("the jar was built for the Spark and Scala it runs with") {
    assert(BuildInfo.sparkVersion === spark.version)
    assert(BuildInfo.sparkVersion.startsWith(BuildInfo.sparkLine + "."))
    assert(BuildInfo.scalaVersion === scala.util.Properties.versionNumberString)
    // where the session's spark-sieve classes come from: the jar (or, in sbt's tests, the classes folder)
    assert(new java.io.File(new java.net.URI(PythonFacade.status(spark).get("jar"))).exists())
  }

  test("a Spark of another line or Scala is refused by name when a session applies the extension") {
    val runningScala = scala.util.Properties.versionNumberString
    val builtScala = BuildInfo.scalaVersion.split('.').take(2).mkString(".")
    assert(BuildInfo.wrongSpark(spark.version, runningScala) === null)
    assert(BuildInfo.wrongSpark(BuildInfo.sparkLine + ".99", builtScala + ".99") === null) // other patch releases
    val other = if (BuildInfo.sparkLine == "3.5") "4.3.0" else "3.5.9"
    val why = BuildInfo.wrongSpark(other, runningScala)
    assert(why.startsWith(s"spark-sieve: this jar is built for Spark ${BuildInfo.sparkLine} (Scala $builtScala)") &&
      why.contains(s"runs Spark $other (Scala $builtScala). Use the jar for Spark ${other.take(3)}"), why)
    // the same line built for the other Scala (Spark 3.5 also ships for 2.13)
    val otherScala = if (builtScala == "2.12") "2.13.16" else "2.12.18"
    val whyScala = BuildInfo.wrongSpark(spark.version, otherScala)
    assert(whyScala != null && whyScala.contains(s"(Scala ${otherScala.take(4)}). spark-sieve builds each line's jar"),
      whyScala)
  }

  test("spark.sieve.enabled=false leaves every plan exactly as vanilla Spark makes it") {
    withConf("spark.sieve.enabled" -> "false") {
      queries.foreach { q =>
        val (ours, theirs) = (q(spark).queryExecution, q(vanilla).queryExecution)
        assert(normalized(ours.optimizedPlan) === normalized(theirs.optimizedPlan))
        assert(normalized(ours.sparkPlan) === normalized(theirs.sparkPlan))
        assertSameRows(q(spark).collect().toSeq, q(vanilla).collect().toSeq)
      }
    }
  }

  test("an unknown spark.sieve key fails the query and names the key, with a suggestion") {
    withConf("spark.sieve.enabld" -> "false") {
      // Spark re-wraps an analysis error (plan attached); the condition and message stay
      val e = intercept[AnalysisException](spark.range(3).collect())
      assert(ErrorCondition.of(e) === "SIEVE_CONFIG_INVALID")
      assert(e.getMessage.startsWith("spark.sieve.enabld: unknown"))
      assert(e.getMessage.contains("did you mean spark.sieve.enabled"))
      // the vanilla session, and SET commands on ours, are not affected
      assert(vanilla.range(3).count() === 3)
      spark.sql("SET spark.sieve.enabld=true")
    }
  }

  test("a malformed value fails the query and names the key and the value") {
    withConf("spark.sieve.enabled" -> "maybe") {
      val e = intercept[AnalysisException](spark.range(3).collect())
      assert(ErrorCondition.of(e) === "SIEVE_CONFIG_INVALID")
      assert(e.getSimpleMessage === "spark.sieve.enabled: 'maybe' is not a boolean (true or false)")
      val direct = intercept[SieveConfigException](PythonFacade.status(spark))
      assert(direct.key === "spark.sieve.enabled" && ErrorCondition.of(direct) === "SIEVE_CONFIG_INVALID")
    }
    assert(spark.range(3).count() === 3)
  }

  test("with the master switch off, nothing is validated either") {
    withConf("spark.sieve.enabled" -> "false", "spark.sieve.enabld" -> "x") {
      assert(spark.range(3).count() === 3)
    }
  }
}
