package sieve

import org.apache.spark.sql.SparkSessionExtensions

import sieve.api.BulkFilterTableFunction
import sieve.bulkfilter.{BulkFilterStrategy, LowerBulkFilters, ReorderSubqueryPredicates}
import sieve.config.{BuildInfo, SieveConf, ValidateSieveConf}
import sieve.dynamicfilter.{AwaitPartitionPruning, DynamicFiltersWithoutAqe, PlaceDynamicFilters,
  SharedExchangeFilters, TrimWholeTableFilters}

/**
 * Entry point: `spark.sql.extensions=sieve.SieveExtensions`. One line per injection, by phase.
 * Every rule is a pure function of the plan and the session's `spark.sieve.*` settings;
 * `spark.sieve.enabled=false` makes each of them return its input unchanged, except that a
 * BulkFilter node (which only `tree.apply` and sieve_bulk_filter create) is still lowered, in written order.
 *
 * Order: both optimizer rules run in Spark's operator-optimization batches (AQE on or off), so
 * BulkFilter nodes are joins before Spark's join rules see them, and subquery filters are ordered
 * before the later RewritePredicateSubquery batch turns them into joins. Dynamic filters are placed
 * on the physical plan after EnsureRequirements (the optimized plan stays vanilla's), by the four rules
 * below in their order.
 */
class SieveExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    // A jar of another Spark line fails the session here, by name, rather than later by a missing method.
    val wrongSpark = BuildInfo.wrongSpark(org.apache.spark.SPARK_VERSION, scala.util.Properties.versionNumberString)
    if (wrongSpark != null) throw new IllegalStateException(wrongSpark)
    // spark.sieve.* known to Spark's SQL conf (spark.conf.get, SET -v): a registry, not a session change.
    SieveConf.registerWithSpark()
    // Analysis: an unknown or malformed spark.sieve.* setting fails the query, naming the key.
    ext.injectCheckRule(_ => ValidateSieveConf)
    // Analysis: `sieve_bulk_filter(TABLE(t), '<tree JSON>', ...)`, `tree.apply(df)` for SQL.
    ext.injectTableFunction(BulkFilterTableFunction.description)
    // Optimizer: a BulkFilter node becomes one SetFilter (value sets) and, for value sources above
    // maxSetBytes, joins in cost order (the node has no physical form, so this rule runs whatever the
    // settings; reordering is what the switches turn off).
    ext.injectOptimizerRule(_ => LowerBulkFilters)
    // Planner: a SetFilter becomes SetFilterExec, which builds its sets when it first executes.
    ext.injectPlannerStrategy(_ => BulkFilterStrategy)
    // Optimizer: IN (subquery) / EXISTS filters ordered by the same cost model, before Spark turns
    // them into joins in written order.
    ext.injectOptimizerRule(_ => ReorderSubqueryPredicates)
    // Physical, after EnsureRequirements (the optimized and planned plan is vanilla's, DPP and runtime
    // filters included), AQE: before query stages are made; without AQE: before exchange reuse.
    val dynamicFilters = Seq(
      // a DynamicFilterExec on each scan that a join's keys reach on its application side, where it pays,
      // reading the join's creation-side exchange
      PlaceDynamicFilters,
      // filters whose creation side is still a whole table once all are placed, and would keep nearly all
      TrimWholeTableFilters,
      // one filter of all their joins' keys in every copy of an exchange computed once for several joins
      SharedExchangeFilters,
      // scans whose filters wait for DPP's keys hold their stage until DPP's broadcast is built
      AwaitPartitionPruning)
    dynamicFilters.foreach(rule => ext.injectQueryStagePrepRule(_ => rule))
    ext.injectColumnar(_ => DynamicFiltersWithoutAqe(dynamicFilters))
  }
}
