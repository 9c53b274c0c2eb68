package org.apache.spark.sql

import org.apache.spark.SparkContext

/** Test-only: a new session over an existing context, with only the extensions its conf names
 * (none in our suites). The constructor is private[sql], hence this package. */
object VanillaSession {
  def over(sc: SparkContext): SparkSession = new classic.SparkSession(sc)
}
