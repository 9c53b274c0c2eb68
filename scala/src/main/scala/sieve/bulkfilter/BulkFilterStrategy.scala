package sieve.bulkfilter

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/** Plans a [[SetFilter]]: its child in the filter's stage, each value source behind its own boundary. */
object BulkFilterStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case f: SetFilter =>
      SetFilterExec(f.condition, f.sets, f.textFiles, f.labels, planLater(f.child), f.sources.map(s => ValueSourceExec(planLater(s)))) :: Nil
    case _ => Nil
  }
}
