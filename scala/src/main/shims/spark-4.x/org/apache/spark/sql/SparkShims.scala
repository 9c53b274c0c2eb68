package org.apache.spark.sql

import org.apache.spark.sql.catalyst.expressions.{CollationKey, Expression, FunctionTableSubqueryArgumentExpression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.execution.{SparkPlan, SubqueryAdaptiveBroadcastExec, SubqueryBroadcastExec}
import org.apache.spark.sql.sources.BaseRelation
import org.apache.spark.sql.types.DataType

/**
 * The Spark calls that differ between the lines spark-sieve supports, for Spark 4.x (its twin for 3.5 is in
 * scala/src/main/shims/spark-3.5). Everything else compiles against every line as it is. In Spark's package: the
 * `classic` session and its helpers are `private[sql]`.
 */
object SparkShims {
  /** `Dataset.ofRows` (4.0 moved the non-Connect session to `classic`). */
  def ofRows(session: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(session.asInstanceOf[classic.SparkSession], plan)

  /** `Column(expr)` / `column.expr` (4.0: a Column holds a Connect-style node, converted by ExpressionUtils). */
  def column(e: Expression): Column = classic.ExpressionUtils.column(e)
  def expression(c: Column): Expression = classic.ExpressionUtils.expression(c)

  /** `SparkSession.baseRelationToDataFrame`, of the classic session. */
  def baseRelationToDataFrame(session: SparkSession, relation: BaseRelation): DataFrame =
    session.asInstanceOf[classic.SparkSession].baseRelationToDataFrame(relation)

  /** `Column.try_cast`: NULL where the value does not convert. */
  def tryCast(c: Column, to: DataType): Column = c.try_cast(to)

  /** `UnsafeRowUtils.isBinaryStable`: equal values have equal bytes (collations, 4.0+). */
  def isBinaryStable(t: DataType): Boolean = UnsafeRowUtils.isBinaryStable(t)

  /** `CollationKey`: a string's bytes under its collation's equality. */
  def collationKey(e: Expression): Expression = CollationKey(e)

  /** Which build keys a DPP subquery reads, of which keys of the broadcast (4.0: several, `indices`; before:
   * one, `index`): before AQE makes its scan's stage and after. None for another subquery. */
  def dppKeys(p: SparkPlan): Option[(Seq[Int], Seq[Expression])] = p match {
    case s: SubqueryAdaptiveBroadcastExec => Some((s.indices, s.buildKeys))
    case s: SubqueryBroadcastExec => Some((s.indices, s.buildKeys))
    case _ => None
  }

  /** `Expression.nullIntolerant` (a trait, `NullIntolerant`, before 4.0). */
  def nullIntolerant(e: Expression): Boolean = e.nullIntolerant

  /** A table function's `TABLE(...)` argument with PARTITION BY / WITH SINGLE PARTITION / ORDER BY (4.0+). */
  def repartitioned(t: FunctionTableSubqueryArgumentExpression): Boolean =
    t.partitionByExpressions.nonEmpty || t.withSinglePartition || t.orderByExpressions.nonEmpty
}
