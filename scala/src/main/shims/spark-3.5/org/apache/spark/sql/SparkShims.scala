package org.apache.spark.sql

import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Expression, FunctionTableSubqueryArgumentExpression, NullIntolerant}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SubqueryAdaptiveBroadcastExec, SubqueryBroadcastExec}
import org.apache.spark.sql.sources.BaseRelation
import org.apache.spark.sql.types.DataType

/**
 * The Spark calls that differ between the lines spark-sieve supports, for Spark 3.5 (its twin for 4.x is in
 * scala/src/main/shims/spark-4.x, which documents each). In Spark's package: `Dataset.ofRows` is `private[sql]`.
 */
object SparkShims {
  def ofRows(session: SparkSession, plan: LogicalPlan): DataFrame = Dataset.ofRows(session, plan)

  def column(e: Expression): Column = new Column(e)
  def expression(c: Column): Expression = c.expr

  def baseRelationToDataFrame(session: SparkSession, relation: BaseRelation): DataFrame =
    session.baseRelationToDataFrame(relation)

  /** 3.5 has no `Column.try_cast`: the cast `try_cast(v AS t)` resolves to. */
  def tryCast(c: Column, to: DataType): Column = new Column(Cast(c.expr, to, None, EvalMode.TRY))

  /** No collations before 4.0: every value compares by its bytes (floats are normalised by the join keys). */
  def isBinaryStable(t: DataType): Boolean = true

  def collationKey(e: Expression): Expression = e

  def dppKeys(p: SparkPlan): Option[(Seq[Int], Seq[Expression])] = p match {
    case s: SubqueryAdaptiveBroadcastExec => Some((Seq(s.index), s.buildKeys))
    case s: SubqueryBroadcastExec => Some((Seq(s.index), s.buildKeys))
    case _ => None
  }

  def nullIntolerant(e: Expression): Boolean = e.isInstanceOf[NullIntolerant]

  /** 3.5's TABLE arguments have no PARTITION BY / ORDER BY. */
  def repartitioned(t: FunctionTableSubqueryArgumentExpression): Boolean = false
}
