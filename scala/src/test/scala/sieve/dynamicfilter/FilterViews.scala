package sieve.dynamicfilter

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.SparkPlan

/** Test views of a [[DynamicFilterExec]], one entry per creation side in the operator's order, and the
 * dynamic-filter rules of a session in the order it runs them. */
object FilterViews {
  implicit class PerCreationSide(f: DynamicFilterExec) {
    private def fed: Seq[(KeyFilter, KeyCollector.Source)] = f.filters.flatMap(k => k.sources.map(k -> _))
    def keys: Seq[Seq[Expression]] = fed.map(_._1.keys)
    def creationKeys: Seq[Seq[Expression]] = fed.map(_._2.keys)
    def picks: Seq[Seq[Int]] = fed.map(_._2.picks)
    def broadcast: Seq[Boolean] = fed.map(_._2.broadcast)
    def probedInStage: Seq[Boolean] = fed.map(_._1.probedInStage)
    def filterOf: Seq[Int] = f.filters.zipWithIndex.flatMap { case (k, i) => k.sources.map(_ => i) }
    def creationRead(c: Int): Seq[Expression] = fed(c)._2.read
  }

  /** `plan` through the dynamic-filter rules `spark` has, in their order (as without AQE). */
  def placeFilters(spark: SparkSession, plan: SparkPlan): SparkPlan =
    spark.sessionState.columnarRules.collectFirst { case r: DynamicFiltersWithoutAqe => r }
      .getOrElse(sys.error("no dynamic-filter rules in this session")).preColumnarTransitions(plan)
}
