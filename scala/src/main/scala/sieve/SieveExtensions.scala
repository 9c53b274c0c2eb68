package sieve

import org.apache.spark.sql.SparkSessionExtensions

import sieve.bulkfilter.LowerBulkFilters
import sieve.config.ValidateSieveConf

/**
 * Entry point: `spark.sql.extensions=sieve.SieveExtensions`. One line per injection, by phase.
 * Every rule is a pure function of the plan and the session's `spark.sieve.*` settings;
 * `spark.sieve.enabled=false` makes each of them return its input unchanged.
 */
class SieveExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    // Analysis: an unknown or malformed spark.sieve.* setting fails the query, naming the key.
    ext.injectCheckRule(_ => ValidateSieveConf)
    // Optimizer: BulkFilter nodes become per-key-column joins in cost order (the node has no physical
    // form, so this rule runs whatever the settings; reordering is what the switches turn off).
    ext.injectOptimizerRule(_ => LowerBulkFilters)
  }
}
