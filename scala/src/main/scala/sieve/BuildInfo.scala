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
}
