package sieve.config

import java.util.Properties

/** What this jar was built from (written by build.sbt into `sieve/sieve-build.properties`). */
object BuildInfo {
  private lazy val props: Properties = {
    val p = new Properties()
    val in = getClass.getResourceAsStream("/sieve/sieve-build.properties")
    // no `require`: its message is a Scala lambda, which a Scala of another binary version cannot link
    if (in == null) throw new IllegalStateException("sieve/sieve-build.properties is missing from the spark-sieve jar")
    try p.load(in) finally in.close()
    p
  }

  def version: String = props.getProperty("version")
  def sparkVersion: String = props.getProperty("sparkVersion")
  def scalaVersion: String = props.getProperty("scalaVersion")
  /** The Spark line (major.minor) this jar is built for: it runs on that line only. */
  def sparkLine: String = props.getProperty("sparkLine")

  /**
   * Why this jar cannot run in a Spark of version `running` on Scala `runningScala` (another line than its
   * own, or another Scala binary version: Spark 3.5 also comes built for Scala 2.13), or null.
   * Plain Java calls only (no Scala collections, no interpolation): this runs first in
   * [[SieveExtensions]], before anything a jar built for another Scala version would fail to link — a
   * failure Spark would log and ignore, leaving a session silently without spark-sieve.
   */
  def wrongSpark(running: String, runningScala: String): String = {
    val runningLine = majorMinor(running)
    val builtScala = majorMinor(scalaVersion)
    if (runningLine == sparkLine && majorMinor(runningScala) == builtScala) null
    else "spark-sieve: this jar is built for Spark " + sparkLine + " (Scala " + builtScala +
      "), but this session runs Spark " + running + " (Scala " + majorMinor(runningScala) + "). " +
      (if (runningLine != sparkLine) "Use the jar for Spark " + runningLine + " (spark_sieve.jar_path(\"" +
        runningLine + "\") gives its path)."
      else "spark-sieve builds each line's jar for the Scala of that line's pyspark release only.")
  }

  /** "3.5.9" -> "3.5", "2.13.16" -> "2.13". */
  private def majorMinor(version: String): String = {
    val dot = version.indexOf('.', version.indexOf('.') + 1)
    if (dot < 0) version else version.substring(0, dot)
  }
}
