package sieve

import org.apache.spark.sql.SparkSessionExtensions

import sieve.bulkfilter.{LowerBulkFilters, ReorderSubqueryPredicates}
import sieve.config.ValidateSieveConf

/**
 * Entry point: `spark.sql.extensions=sieve.SieveExtensions`. One line per injection, by phase.
 * Every rule is a pure function of the plan and the session's `spark.sieve.*` settings;
 * `spark.sieve.enabled=false` makes each of them return its input unchanged, except that a
 * BulkFilter node (which only `tree.apply` creates) is still lowered, in written order.
 *
 * Order: both optimizer rules run in Spark's operator-optimization batches (AQE on or off), so
 * BulkFilter nodes are joins before Spark's join rules see them, and subquery filters are ordered
 * before the later RewritePredicateSubquery batch turns them into joins.
 */
class SieveExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    // Analysis: an unknown or malformed spark.sieve.* setting fails the query, naming the key.
    ext.injectCheckRule(_ => ValidateSieveConf)
    // Optimizer: BulkFilter nodes become per-key-column joins in cost order (the node has no physical
    // form, so this rule runs whatever the settings; reordering is what the switches turn off).
    ext.injectOptimizerRule(_ => LowerBulkFilters)
    // Optimizer: IN (subquery) / EXISTS filters ordered by the same cost model, before Spark turns
    // them into joins in written order.
    ext.injectOptimizerRule(_ => ReorderSubqueryPredicates)
  }
}
