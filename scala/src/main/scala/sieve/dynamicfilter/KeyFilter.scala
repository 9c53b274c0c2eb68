package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.SparkPlan

/**
 * One filter of a [[DynamicFilterExec]]: a row is kept when its `keys` (over the operator's child) may match a
 * key of one of its `sources` (usually one; several in the copies of an exchange computed once for several
 * joins, [[SharedExchangeFilters]]). `probedInStage`: its sources are broadcasts whose joins probe each of the
 * child's rows in its stage (see [[DynamicFilterExec]]); `minScanBytes`: what the scan must read for it to pay
 * at run time once dynamic partition pruning has run (0: its size does not decide); `bound`: what ends the
 * scan's wait for its sources when it outgrows what the filter saves ([[WaitBoundExec]], under AQE).
 */
final case class KeyFilter(keys: Seq[Expression], sources: Seq[KeyCollector.Source], probedInStage: Boolean,
    minScanBytes: Long, bound: Option[SparkPlan] = None) {
  override def toString: String = s"${keys.mkString("[", ", ", "]")} from ${sources.mkString(" or ")}"
}
