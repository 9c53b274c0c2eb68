package sieve.dynamicfilter

import org.apache.spark.sql.{classic, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/**
 * Puts dynamic filters into plans, as each join is planned: [[InjectDynamicFilters]] decides, Spark's
 * own strategies then plan the join, and the [[DynamicFilter]] on its side becomes an unwired
 * [[DynamicFilterExec]]; [[WireDynamicFilters]] connects it to that join's creation side once the join
 * strategy and exchanges are known. At planning time the optimizer has finished, so the plan it made is
 * vanilla Spark's (dynamic partition pruning included), and IN / EXISTS subqueries are semi joins.
 */
case class DynamicFilterStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case DynamicFilter(keys, madeFor, child) => DynamicFilterExec(keys, planLater(child), madeFor) :: Nil
    case j: Join =>
      val injected = InjectDynamicFilters.injectInto(j)
      if (injected eq j) Nil
      else sparkStrategies.iterator.map(_(injected)).find(_.nonEmpty).getOrElse(Nil)
    case _ => Nil
  }

  private def sparkStrategies: Seq[SparkStrategy] =
    session.asInstanceOf[classic.SparkSession].sessionState.planner.strategies.filterNot(_.isInstanceOf[DynamicFilterStrategy])
}
