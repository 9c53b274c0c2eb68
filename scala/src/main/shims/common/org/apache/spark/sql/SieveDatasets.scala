package org.apache.spark.sql

import org.apache.spark.sql.catalyst.expressions.KnownNotNull
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.DataSource

/** The Spark-internal calls spark-sieve needs, kept in one place. */
object SieveDatasets {
  /** A DataFrame over a plan spark-sieve built. */
  def ofRows(session: SparkSession, plan: LogicalPlan): DataFrame = SparkShims.ofRows(session, plan)

  /** `c`, declared never NULL (the caller's promise), so that no NULL check is planned for it. */
  def knownNotNull(c: Column): Column =
    SparkShims.column(KnownNotNull(SparkShims.expression(c)))

  /** The reader option that makes a path be read as that path, glob characters and all. */
  val NoGlobbing: (String, String) = DataSource.GLOB_PATHS_KEY -> "false"
}
