package sieve.dynamicfilter

import org.apache.spark.sql.{classic, SparkSession}
import org.apache.spark.sql.catalyst.expressions.AttributeSet
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/**
 * Plans a [[DynamicFilter]] as an unwired [[DynamicFilterExec]]; [[WireDynamicFilters]] connects it to
 * its join's creation side once the join strategy and exchanges are known.
 *
 * Filters that Spark's later rules put between the join and the DynamicFilter — dynamic partition
 * pruning's, the runtime bloom filter's, column pruning's projections — are planned below it, on the
 * scan: there the DPP filter prunes partitions (above the DynamicFilter it would be dropped as not on a
 * scan), and every filter sees the rows it sees in vanilla Spark.
 *
 * Joins made after [[InjectDynamicFilters]] ran — `IN (subquery)` / `EXISTS` become semi joins in
 * Spark's last optimizer batches — get their filter here, and are then planned by Spark's own
 * strategies.
 */
case class DynamicFilterStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case DynamicFilter(keys, madeFor, child) => DynamicFilterExec(keys, planLater(child), madeFor) :: Nil
    case AboveDynamicFilter(filter, below) => DynamicFilterExec(filter.keys, planLater(below), filter.madeFor) :: Nil
    case j: Join =>
      val injected = InjectDynamicFilters.injectInto(j)
      if (injected eq j) Nil
      else sparkStrategies.iterator.map(_(injected)).find(_.nonEmpty).getOrElse(Nil)
    case _ => Nil
  }

  private def sparkStrategies: Seq[SparkStrategy] =
    session.asInstanceOf[classic.SparkSession].sessionState.planner.strategies.filterNot(_.isInstanceOf[DynamicFilterStrategy])
}

/** Projections and filters over a [[DynamicFilter]] whose keys they keep: the filter, and the same
 * projections and filters over its child. */
private object AboveDynamicFilter {
  def unapply(plan: LogicalPlan): Option[(DynamicFilter, LogicalPlan)] = plan match {
    case _: Project | _: Filter =>
      sink(plan).filter { case (f, below) => AttributeSet(f.keys.flatMap(_.references)).subsetOf(below.outputSet) }
    case _ => None
  }

  private def sink(plan: LogicalPlan): Option[(DynamicFilter, LogicalPlan)] = plan match {
    case f: DynamicFilter => Some((f, f.child))
    case p: Project => sink(p.child).map { case (f, below) => (f, p.withNewChildren(Seq(below))) }
    case p: Filter => sink(p.child).map { case (f, below) => (f, p.withNewChildren(Seq(below))) }
    case _ => None
  }
}
