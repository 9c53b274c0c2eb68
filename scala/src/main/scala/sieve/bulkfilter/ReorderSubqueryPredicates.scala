package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions.{And, Expression, Or, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreePattern.{EXISTS_SUBQUERY, IN_SUBQUERY, LIST_SUBQUERY}

import sieve.config.SieveConf
import sieve.ordering._
import sieve.plan.Preconditions

/**
 * Orders the AND/OR levels of ordinary filters built from `IN (subquery)` / `EXISTS` / `NOT EXISTS`
 * predicates with the configured cost model, as bulk filters are ordered. Spark turns such predicates
 * into semi / anti / existence joins in the order they are written (RewritePredicateSubquery, which
 * runs after this rule's batch), so the written order is the join order. Under `seed`, row-local
 * predicates count as cheaper than any subquery (cost 0.01 against 0.1); under `stats`, see
 * [[SubqueryLeafStatistics]]. Ties keep the written order, and a condition already in order is left
 * as it is, so the rule reaches a fixed point (the stats model's sample is cached).
 *
 * What never moves ([[Preconditions]]): a predicate that is nondeterministic or can raise an error
 * keeps its place, and nothing is moved past it (`x = 0 OR (EXISTS (...) AND 10 / x > 1)` stays as
 * written). At the top AND, the conjuncts without IN / EXISTS keep their written order among
 * themselves: Spark evaluates all of them before the first subquery join, wherever they stand.
 */
object ReorderSubqueryPredicates extends Rule[LogicalPlan] {
  private val RowLocalCost = 0.01

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!SieveConf.enabled(conf) || !SieveConf.SUBQUERY_ORDER_ENABLED.get(conf)) plan
    else plan.transformWithPruning(_.containsAnyPattern(EXISTS_SUBQUERY, IN_SUBQUERY, LIST_SUBQUERY)) {
      case f @ Filter(condition, child) if SubqueryExpression.hasSubquery(condition) =>
        val ordered = toExpression(reorder(toTree(condition), child))
        if (ordered == condition) f else f.copy(condition = ordered)
    }

  private def reorder(tree: FilterTree[Expression], input: LogicalPlan): FilterTree[Expression] = {
    val leaves = tree.leaves.toIndexedSeq
    val model = SieveConf.SUBQUERY_ORDER_COST_MODEL.get(conf) match {
      case _ if SieveConf.placeEveryFilter(conf) => new HashOrder(i => leaves(i).canonicalized.hashCode)
      case "stats" if leaves.count(SubqueryExpression.hasSubquery) > 1 =>
        new StatsCostModel(SubqueryLeafStatistics.estimate(leaves, input,
          SieveConf.BULK_FILTER_SAMPLE_ROWS.get(conf).toInt))
      case _ => new SeedCostModel(i => leafCost(leaves(i)))
    }
    def pinned(t: FilterTree[Int]) =
      !t.leaves.map(leaves).forall(e => Preconditions.deterministic(e) && Preconditions.cannotRaise(e))
    def joined(t: FilterTree[Int]) = t.leaves.map(leaves).exists(SubqueryExpression.hasInOrCorrelatedExistsSubquery)
    (tree.leafIndexes match {
      case AllOf(conjuncts) =>
        val (evaluatedFirst, joins) = conjuncts.partition(c => !joined(c))
        val ordered = if (joins.size > 1) model.reorder(AllOf(joins), pinned).asInstanceOf[AllOf[Int]].children
          else joins.map(model.reorder(_, pinned))
        AllOf(evaluatedFirst ++ ordered)
      case other => model.reorder(other, pinned)
    }).map(leaves)
  }

  private def toTree(e: Expression): FilterTree[Expression] = e match {
    case _: And => AllOf(flatten(e) { case And(l, r) => Seq(l, r) }.map(toTree))
    case _: Or => AnyOf(flatten(e) { case Or(l, r) => Seq(l, r) }.map(toTree))
    case leaf => Leaf(leaf)
  }

  /** The operands of a chain of one operator: `a AND (b AND c)` -> a, b, c. */
  private def flatten(e: Expression)(split: PartialFunction[Expression, Seq[Expression]]): Seq[Expression] =
    split.lift(e).map(_.flatMap(c => flatten(c)(split))).getOrElse(Seq(e))

  private def leafCost(e: Expression): Double =
    if (SubqueryExpression.hasSubquery(e)) SeedCostModel.LeafCost else RowLocalCost

  private def toExpression(t: FilterTree[Expression]): Expression = t match {
    case Leaf(e) => e
    case AllOf(cs) => cs.map(toExpression).reduceLeft(And)
    case AnyOf(cs) => cs.map(toExpression).reduceLeft(Or)
  }
}
