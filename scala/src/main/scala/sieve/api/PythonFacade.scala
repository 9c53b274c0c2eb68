package sieve.api

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, SparkSession}

import sieve.config.BuildInfo
import sieve.bulkfilter.{ApplyBulkFilter, BulkFilter, BulkFilterOrder, FilterTreeJson, SetFilterExplain}
import sieve.config.{SieveConf, ValidateSieveConf}
import sieve.dynamicfilter.DynamicFilterExplain

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
}
