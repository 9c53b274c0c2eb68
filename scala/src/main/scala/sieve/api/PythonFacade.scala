package sieve.api

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

import org.apache.spark.sql.{DataFrame, SparkSession}

import sieve.bulkfilter.{ApplyBulkFilter, BulkFilter, BulkFilterOrder, FilterTreeJson, SetFilterExplain, ValueSources}
import sieve.config.BuildInfo
import sieve.config.{SieveConf, ValidateSieveConf}
import sieve.dynamicfilter.DynamicFilterExplain
import sieve.errors.{SieveException, SieveSourceException}

/**
 * The one door from Python into the JVM. Python checks its arguments before calling; every method
 * here takes and returns plain Java types so py4j needs no conversions of its own.
 */
object PythonFacade {
  def buildInfo(): java.util.Map[String, String] = Map(
    "version" -> BuildInfo.version,
    "sparkVersion" -> BuildInfo.sparkVersion,
    "sparkLine" -> BuildInfo.sparkLine,
    "scalaVersion" -> BuildInfo.scalaVersion).asJava

  /**
   * True when `SieveExtensions` was applied to this session: asks the session's own analyzer,
   * not the `spark.sql.extensions` string, so a session built without it is seen as such.
   */
  def isRegistered(session: SparkSession): Boolean =
    session.sessionState.analyzer.extendedCheckRules.contains(ValidateSieveConf)

  /**
   * The session's view of spark-sieve: versions, whether the extension is registered, and every
   * setting's effective value. Fails with a SieveConfigException on an unknown or malformed setting.
   */
  def status(session: SparkSession): java.util.Map[String, String] = {
    val conf = session.sessionState.conf
    SieveConf.validate(conf)
    val settings = SieveConf.all.map(e => e.key -> String.valueOf(e.get(conf)))
    (Seq(
      "version" -> BuildInfo.version,
      "builtForSpark" -> BuildInfo.sparkVersion,
      "builtForScala" -> BuildInfo.scalaVersion,
      "runningSpark" -> session.version,
      // the jar this session loaded spark-sieve from (with several lines' jars about, which one)
      "jar" -> String.valueOf(getClass.getProtectionDomain.getCodeSource.getLocation),
      "registered" -> isRegistered(session).toString) ++ settings).toMap.asJava
  }

  /**
   * What the Python bindings take from the JVM rather than copy, as JSON: the value-source formats, each error
   * class with its condition, and how a task's bad value is raised. Written into the wheel when it is built
   * (`main`, called by dev/hatch_build_jar.py); tests/test_package.py checks the wheel's against the jar's.
   */
  def contract(): String = {
    val mapper = new ObjectMapper()
    val o = mapper.createObjectNode()
    val formats = o.putArray("formats")
    ValueSources.Formats.foreach(f => formats.add(f))
    val errors = o.putArray("errors")
    SieveException.conditions.foreach { case (cls, condition) => errors.addObject().put("class", cls).put("condition", condition) }
    o.putObject("raised").put("prefix", SieveException.RaisedPrefix).put("class", classOf[SieveSourceException].getName)
    mapper.writerWithDefaultPrettyPrinter().writeValueAsString(o) + "\n"
  }

  /** `java -cp <jar>:<Spark's jars> sieve.api.PythonFacade <file>`: writes [[contract]] to the file. */
  def main(args: Array[String]): Unit =
    Files.write(Paths.get(args.head), contract().getBytes(UTF_8))

  /** `BulkFilter.from_json(json)`: the tree checked and written in its one form (FilterTreeJson.canonical). */
  def canonicalTree(json: String): String = FilterTreeJson.canonical(json)

  /** `tree.apply(df)`: `json` is the tree (see FilterTreeJson), `frames` the DataFrame sources. */
  def applyBulkFilter(df: DataFrame, json: String, frames: java.util.List[DataFrame]): DataFrame =
    ApplyBulkFilter(df, FilterTreeJson.parse(json, frames.asScala.toSeq))

  /** `spark_sieve.explain(df)`: each BulkFilter in the plan, as written and as it will run; after `df`
   * has run, each set filter with what its sets held and what it pushed into the scan. */
  def explainBulkFilters(df: DataFrame): String = {
    val conf = df.sparkSession.sessionState.conf
    (df.queryExecution.analyzed.collect { case bf: BulkFilter => BulkFilterOrder.explain(bf, conf) } ++
      SetFilterExplain(df.queryExecution.executedPlan)).mkString("\n\n")
  }

  /** `spark_sieve.explain(df)`: each DynamicFilter of the physical plan, with what it chose and did
   * (figures are those of the last run of `df`; before any, the plan as it would start). */
  def explainDynamicFilters(df: DataFrame): String =
    DynamicFilterExplain(df.queryExecution.executedPlan).mkString("\n\n")

  /** The bench's oracle: each dynamic filter of `df`'s last run on one integral column, as [column name, the runs
   * of the keys it kept (lo, hi, ...) or null where they were not exact or more than `limit` runs]. */
  def keptKeyRanges(df: DataFrame, limit: Int): java.util.List[java.util.List[Any]] =
    DynamicFilterExplain.keptRanges(df.queryExecution.executedPlan, limit).map { case (name, runs) =>
      Seq[Any](name, runs.orNull).asJava
    }.asJava
}
