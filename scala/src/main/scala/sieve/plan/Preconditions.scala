package sieve.plan

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Count, First, Last, Max, Min}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.SparkShims
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.DataType

/**
 * What every spark-sieve rule checks before it moves or inserts anything, in one place. A rule that
 * cannot show a precondition holds declines: a slower plan is a bug, a different answer or a new
 * error is a disaster.
 *
 *  - [[deterministic]]: a nondeterministic expression (rand(), uuid(), ...) keeps its place and its
 *    evaluation count, so nothing is moved past it and it is never moved.
 *  - [[cannotRaise]]: only an expression that raises no error for any input may be moved ahead of a
 *    guard, or have a guard moved ahead of it (ANSI mode is Spark's default: `10 / x` raises).
 *  - [[binaryStable]]: a key set compares the bytes of keys; a type whose equality is not byte
 *    equality (non-binary collations) gets no key set.
 *  - [[sharedForCertain]]: a filter built from one side of a join reads the rows the join reads only
 *    when that side is computed once for both (exchange reuse on, and a deterministic side).
 */
object Preconditions {

  def deterministic(e: Expression): Boolean = e.deterministic

  /** Every expression of every operator of a planned `plan` is deterministic. */
  def deterministic(plan: SparkPlan): Boolean = plan.find(!_.expressions.forall(_.deterministic)).isEmpty

  /** True only for expressions known never to raise, whatever their input: a whitelist, so anything
   * new or unknown (arithmetic under ANSI, casts that can fail, UDFs, raise_error) counts as raising.
   * A subquery is safe when every expression of its plan is. */
  def cannotRaise(e: Expression): Boolean = e match {
    case _: Attribute | _: Literal | _: OuterReference | _: BoundReference => true
    case c: Cast => (c.evalMode == EvalMode.TRY || Cast.canUpCast(c.child.dataType, c.dataType)) &&
      cannotRaise(c.child)
    case s: SubqueryExpression => s.children.forall(cannotRaise) && planCannotRaise(s.plan)
    case _: And | _: Or | _: Not | _: IsNull | _: IsNotNull | _: IsNaN | _: EqualTo | _: EqualNullSafe |
         _: LessThan | _: LessThanOrEqual | _: GreaterThan | _: GreaterThanOrEqual | _: In | _: InSet |
         _: InSubquery | _: Coalesce | _: If | _: CaseWhen | _: Alias | _: KnownNotNull | _: KnownFloatingPointNormalized |
         _: NormalizeNaNAndZero | _: SortOrder | _: StartsWith | _: EndsWith | _: Contains =>
      e.children.forall(cannotRaise)
    case a: AggregateExpression => a.aggregateFunction match {
      case _: Count | _: Max | _: Min | _: First | _: Last => a.children.forall(cannotRaise)
      case _ => false
    }
    case _ => false
  }

  private def planCannotRaise(plan: LogicalPlan): Boolean =
    plan.find(p => !p.expressions.forall(cannotRaise)).isEmpty

  /** Equal values of `t` have equal bytes in an UnsafeRow (floats are normalised by the join's own
   * keys, which the filters use; strings must be UTF8_BINARY or another binary collation). */
  def binaryStable(t: DataType): Boolean = SparkShims.isBinaryStable(t)

  /** The join side `creation` is computed once for its join and for a filter that reads it: Spark
   * reuses one exchange for both only with exchange reuse on (AQE's stage cache too), and a
   * nondeterministic side computed twice would give the filter other rows than the join. */
  def sharedForCertain(creation: SparkPlan, conf: SQLConf): Boolean =
    conf.exchangeReuseEnabled && deterministic(creation)
}
