package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, KnownFloatingPointNormalized}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * Keep the rows of `child` (a join's application side) whose `keys` may match a key of the join's
 * other side (the creation side). Rows never change otherwise: the node only ever drops rows the join
 * would drop. [[InjectDynamicFilters]] puts it directly under its join as the join is planned
 * ([[DynamicFilterStrategy]]), as a [[DynamicFilterExec]] that [[WireDynamicFilters]] pairs with that
 * same join.
 */
case class DynamicFilter(keys: Seq[Expression], madeFor: JoinKeys, child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = child.output
  override def maxRows: Option[Long] = child.maxRows

  override def simpleString(maxFields: Int): String =
    s"DynamicFilter ${keys.mkString("[", ", ", "]")} from ${madeFor.creation.mkString("[", ", ", "]")}"

  override protected def withNewChildInternal(newChild: LogicalPlan): DynamicFilter = copy(child = newChild)
}

/**
 * The key pairs of the join a filter was made for: `application(i) = creation(i)`. Held outside the
 * plan's expressions (this is not an Expression), so no rule rewrites them: a join whose keys are no
 * longer these is not the join the filter was made for, and gets no filter.
 */
final case class JoinKeys(application: Seq[Expression], creation: Seq[Expression]) {
  /** The same key pairs, in any order (EnsureRequirements may reorder a join's keys). */
  def sameAs(app: Seq[Expression], cre: Seq[Expression]): Boolean = {
    def pairs(a: Seq[Expression], c: Seq[Expression]) =
      a.zip(c).map { case (x, y) => (JoinKeys.plain(x).canonicalized, JoinKeys.plain(y).canonicalized) }.toSet
    app.size == application.size && cre.size == creation.size && pairs(app, cre) == pairs(application, creation)
  }
}

object JoinKeys {
  /** A key without the float normalisation Spark adds to join keys after the filter was made
   * (NormalizeFloatingNumbers: -0.0 and NaN made one value each). */
  def plain(key: Expression): Expression = key.transformUp {
    case KnownFloatingPointNormalized(NormalizeNaNAndZero(child)) => child
  }
}
