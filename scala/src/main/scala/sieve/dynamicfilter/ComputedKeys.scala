package sieve.dynamicfilter

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, PlanExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Average, Count, Max, Min, Sum}
import org.apache.spark.sql.execution.{FilterExec, InputAdapter, ProjectExec, SortExec, SparkPlan, UnaryExecNode,
  WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.types.{ByteType, DecimalType, IntegerType, LongType, ShortType}

import sieve.plan.Preconditions

/**
 * The creation side of a shuffled join that reads no exchange of its own: an aggregate and its HAVING over the
 * shuffle they are partitioned by (TPC-H q18: `o_orderkey IN (SELECT l_orderkey ... GROUP BY l_orderkey HAVING
 * sum(l_quantity) > 300)`, 57 of 1.5M orders). Its keys are computed by a job over that shuffle (the same stage
 * as the join's: exchange reuse), running the side's operators again — a final aggregate and its filter — before
 * the application side's scan starts. Only operators that give the same rows however the shuffle's blocks
 * arrive: projections and filters of deterministic expressions, aggregates whose functions are count, min, max,
 * or sum / avg of integers or decimals (exact), no subquery; every leaf a shuffle. An error in that job (an
 * ANSI overflow the join may not meet in its own order) drops the filter ([[KeyCollector]]): never a new error.
 */
object ComputedKeys {
  /** `side` (a shuffled join's side, its sort dropped) as a creation side whose keys a job computes, if its
   * operators allow ([[ComputedKeys]]). */
  def of(side: SparkPlan): Option[ComputedKeysExec] = {
    val plan = side match { case s: SortExec => s.child; case other => other }
    if (computes(plan) && plan.exists(_.isInstanceOf[BaseAggregateExec])) Some(ComputedKeysExec(plan)) else None
  }

  /** A computed creation side, also as a child of whole-stage codegen (an input of the scan's stage). */
  def unapply(plan: SparkPlan): Option[ComputedKeysExec] = plan match {
    case c: ComputedKeysExec => Some(c)
    case InputAdapter(c: ComputedKeysExec) => Some(c)
    case _ => None
  }

  /** The shuffles (or their stages) a computed creation side reads. */
  def shuffles(c: ComputedKeysExec): Seq[SparkPlan] = c.child.collect {
    case s @ (_: ShuffleExchangeLike | _: ShuffleQueryStageExec | ReusedExchangeExec(_, _: ShuffleExchangeLike)) => s
  }

  private def computes(p: SparkPlan): Boolean = p match {
    case _: ShuffleExchangeLike | _: ShuffleQueryStageExec | ReusedExchangeExec(_, _: ShuffleExchangeLike) => true
    case _ if !Preconditions.deterministic(p) ||
      p.expressions.exists(_.exists(_.isInstanceOf[PlanExpression[_]])) => false
    case a: BaseAggregateExec =>
      a.aggregateExpressions.forall(e => orderFree(e.aggregateFunction)) && computes(a.child)
    case _: ProjectExec | _: FilterExec | _: SortExec | _: AQEShuffleReadExec | _: InputAdapter |
         _: WholeStageCodegenExec => computes(p.children.head)
    case _ => false
  }

  /** An aggregate function whose result does not depend on the order of its input rows. */
  private def orderFree(f: org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction): Boolean = f match {
    case _: Count | _: Min | _: Max => true
    case s: Sum => exact(s.child.dataType)
    case a: Average => exact(a.child.dataType)
    case _ => false
  }

  private def exact(t: org.apache.spark.sql.types.DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | _: DecimalType => true
    case _ => false
  }
}

/**
 * A creation side whose keys a job computes ([[ComputedKeys]]), as a [[DynamicFilterExec]] reads it: not part of
 * the scan's generated code (whole-stage codegen gives it a stage of its own), its shuffles the join's stages.
 */
case class ComputedKeysExec(child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override protected def doExecute(): RDD[InternalRow] = child.execute()
  override protected def withNewChildInternal(newChild: SparkPlan): ComputedKeysExec = copy(child = newChild)
}
