package sieve.dynamicfilter

import org.apache.spark.sql.{classic, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/**
 * Plans a [[DynamicFilter]] as an unwired [[DynamicFilterExec]]; [[WireDynamicFilters]] connects it to
 * its join's creation side once the join strategy and exchanges are known.
 * Joins made after [[InjectDynamicFilters]] ran — `IN (subquery)` / `EXISTS` become semi joins in
 * Spark's last optimizer batches — get their filter here, and are then planned by Spark's own
 * strategies.
 */
case class DynamicFilterStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case DynamicFilter(keys, _, child) => DynamicFilterExec(keys, planLater(child)) :: Nil
    case j: Join =>
      val injected = InjectDynamicFilters.injectInto(j)
      if (injected eq j) Nil
      else sparkStrategies.iterator.map(_(injected)).find(_.nonEmpty).getOrElse(Nil)
    case _ => Nil
  }

  private def sparkStrategies: Seq[SparkStrategy] =
    session.asInstanceOf[classic.SparkSession].sessionState.planner.strategies.filterNot(_.isInstanceOf[DynamicFilterStrategy])
}
