package sieve

import java.util.Properties

/** What this jar was built from (written by build.sbt into `sieve/sieve-build.properties`). */
object BuildInfo {
  private lazy val props: Properties = {
    val p = new Properties()
    val in = getClass.getResourceAsStream("/sieve/sieve-build.properties")
    require(in != null, "sieve/sieve-build.properties is missing from the spark-sieve jar")
    try p.load(in) finally in.close()
    p
  }

  def version: String = props.getProperty("version")
  def sparkVersion: String = props.getProperty("sparkVersion")
  def scalaVersion: String = props.getProperty("scalaVersion")
  /** The Spark line (major.minor) this jar is built for: it runs on that line only. */
  def sparkLine: String = props.getProperty("sparkLine")

  /**
   * Why this jar cannot run in a Spark of version `running` (another line than its own), or null.
   * Plain Java calls only (no Scala collections, no interpolation): this runs first in
   * [[SieveExtensions]], before anything a jar built for another Scala version would fail to link — a
   * failure Spark would log and ignore, leaving a session silently without spark-sieve.
   */
  def wrongSpark(running: String): String = {
    val dot = running.indexOf('.', running.indexOf('.') + 1)
    val runningLine = if (dot < 0) running else running.substring(0, dot)
    if (runningLine == sparkLine) null
    else "spark-sieve: this jar is built for Spark " + sparkLine + " (Scala " + scalaVersion +
      "), but this session runs Spark " + running + ". Use the jar for Spark " + runningLine +
      " (spark_sieve.jar_path(\"" + runningLine + "\") gives its path)."
  }
}
