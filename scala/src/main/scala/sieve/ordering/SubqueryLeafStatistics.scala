package sieve.ordering

import scala.util.Try

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LeafNode, LogicalPlan, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.EstimationUtils

/**
 * Stats-model estimates for the leaves of an ordinary filter ([[ReorderSubqueryPredicates]]): an
 * `IN (subquery)` or an `EXISTS` correlated by an equality on a column of the input is a leaf like a
 * bulk filter's — its values are the subquery's estimated rows, the column's distinct count comes from
 * [[LeafStatistics.InputStatistics]]. The input is sampled only when it is a plain scan (projections
 * and filters over one relation), where the first rows are cheap; otherwise every key counts as
 * distinct. A subquery with no such key keeps the seed's guess (keeps 10%); a row-local predicate is
 * cheap (cost 0.01) and keeps half.
 */
object SubqueryLeafStatistics {
  private val Opaque = LeafEstimate.of(selectivity = SeedCostModel.LeafCost, cost = 1.0)
  private val RowLocal = LeafEstimate.of(selectivity = 0.5, cost = 0.01)

  private final case class Keyed(include: Boolean, key: Attribute, subquery: LogicalPlan)

  def estimate(leaves: Seq[Expression], input: LogicalPlan, sampleRows: Int): Seq[LeafEstimate] = {
    val keyed = leaves.map(keyedLeaf(_, input))
    val keys = keyed.flatten.map(_.key).distinct
    lazy val stats = InputStatistics(input, keys, if (plainScan(input)) sampleRows else 0)
    leaves.zip(keyed).map {
      case (_, Some(Keyed(include, key, subquery))) =>
        Try(rowsOf(subquery)).toOption.map { values =>
          LeafEstimate(include, values, stats.distinct(key), cost = 1.0 + values / stats.rows)
        }.getOrElse(Opaque)
      case (e, None) => if (SubqueryExpression.hasSubquery(e)) Opaque else RowLocal
    }
  }

  private def keyedLeaf(e: Expression, input: LogicalPlan): Option[Keyed] = e match {
    case Not(inner) => keyedLeaf(inner, input).map(k => k.copy(include = !k.include))
    case InSubquery(Seq(value), query: ListQuery) =>
      inputColumn(value, input).map(Keyed(include = true, _, query.plan))
    case exists: Exists =>
      val plan = exists.plan
      val correlated = plan.flatMap(_.expressions).flatMap(_.collect {
        case EqualTo(OuterReference(a: Attribute), _) => a
        case EqualTo(_, OuterReference(a: Attribute)) => a
      })
      correlated.flatMap(inputColumn(_, input)).headOption.map(Keyed(include = true, _, plan))
    case _ => None
  }

  private def inputColumn(e: Expression, input: LogicalPlan): Option[Attribute] =
    e.references.toSeq match {
      case Seq(a) if input.outputSet.contains(a) => Some(a)
      case _ => None
    }

  private def rowsOf(plan: LogicalPlan): Double = {
    val stats = plan.stats
    stats.rowCount.map(_.toDouble)
      .getOrElse((stats.sizeInBytes / EstimationUtils.getSizePerRow(plan.output)).toDouble)
      .max(1.0)
  }

  private def plainScan(plan: LogicalPlan): Boolean = plan.find {
    case _: LeafNode | _: SubqueryAlias => false
    case p: Project => p.projectList.exists(SubqueryExpression.hasSubquery)
    case f: Filter => SubqueryExpression.hasSubquery(f.condition)
    case _ => true
  }.isEmpty
}
