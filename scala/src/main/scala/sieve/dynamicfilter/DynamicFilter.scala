package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * Keep the rows of `child` (a join's application side) whose `keys` may match a key of the join's
 * other side (the creation side, named in `creation` for explain). Rows never change otherwise:
 * the node only ever drops rows the join would drop. [[InjectDynamicFilters]] puts it directly under
 * the join; [[DynamicFilterStrategy]] plans it as a [[DynamicFilterExec]].
 */
case class DynamicFilter(keys: Seq[Expression], creation: String, child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = child.output
  override def maxRows: Option[Long] = child.maxRows

  override def simpleString(maxFields: Int): String =
    s"DynamicFilter ${keys.mkString("[", ", ", "]")} from $creation"

  override protected def withNewChildInternal(newChild: LogicalPlan): DynamicFilter = copy(child = newChild)
}
