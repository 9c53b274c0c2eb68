package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

/** Without AQE: the dynamic-filter `rules`, in order, after EnsureRequirements and before exchange reuse (under
 * AQE they run again on each stage's plan as it is made: a filter there already is not added again). */
case class DynamicFiltersWithoutAqe(rules: Seq[Rule[SparkPlan]]) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      PlaceDynamicFilters.underAqe.withValue(false)(rules.foldLeft(plan)((p, rule) => rule(p)))
  }
}
