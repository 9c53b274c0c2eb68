package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan

import sieve.dynamicfilter.DynamicFilterBenefit.Decline
import sieve.dynamicfilter.FilterPlans.tagNoFilter

/**
 * Drops, once [[PlaceDynamicFilters]] has placed every filter, those whose creation side is still a whole
 * table and whose keys would keep nearly every row ([[DynamicFilterBenefit.keepsNearlyAll]]): a filter
 * placed below it later, which its keys feed, may have made it selective (`fact ⋈ d1 ⋈ d2`: d2's keys filter
 * d1), so this is asked only now. Their joins are tagged with why, unless another filter reads their keys.
 * Bottom-up: a broadcast that loses its filter here is a whole table again for the filters above that read it.
 */
object TrimWholeTableFilters extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!PlaceDynamicFilters.active(plan) || !plan.exists(_.isInstanceOf[DynamicFilterExec])) plan
    else FilterPlans.during(plan) {
      val why = scala.collection.mutable.LinkedHashMap[CreationRewire.Unfiltered, String]()
      val trimmed = plan.transformUp { case d: DynamicFilterExec =>
        d.filters.indices.reverse.foldLeft(d: SparkPlan) {
          case (f: DynamicFilterExec, i) => f.filters(i).sources match {
            case Seq(source) => DynamicFilterBenefit.keepsNearlyAll(f, f.filters(i).keys, source) match {
              case Decline(reason, _) => why(CreationRewire.unfiltered(source.creation)) = reason; f.without(i)
              case _ => f
            }
            case _ => f
          }
          case (other, _) => other
        }
      }
      if (why.nonEmpty) {
        val read = trimmed.collect { case f: DynamicFilterExec => f.creations }.flatten
          .map(CreationRewire.unfiltered).toSet
        trimmed.foreach {
          case EquiJoin(j) => (j.leftExchange ++ j.rightExchange).map(CreationRewire.unfiltered)
            .find(e => why.contains(e) && !read.contains(e)).foreach(e => tagNoFilter(j.join, why(e)))
          case _ =>
        }
      }
      if (trimmed eq plan) plan
      else CreationRewire(trimmed).getOrElse {
        logWarning("spark-sieve: dynamic filters of this plan wait for each other once trimmed; kept as placed")
        plan
      }
    }
}
