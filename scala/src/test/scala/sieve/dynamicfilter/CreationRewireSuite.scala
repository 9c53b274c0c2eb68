package sieve.dynamicfilter

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, IsNotNull}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{FilterExec, InputAdapter, LeafExecNode, ProjectExec, SparkPlan, UnionExec,
  WholeStageCodegenExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.types.LongType
import org.scalatest.funsuite.AnyFunSuite

/** [[CreationRewire.unfiltered]]: what a plan computes, compared without canonicalizing where shapes differ; and
 * [[FilterPlans.sharedExchanges]], which finds an exchange's copies by it. */
class CreationRewireSuite extends AnyFunSuite {
  private val a = AttributeReference("a", LongType)()
  private val b = AttributeReference("b", LongType)()
  private def leaf = RewireLeaf(Seq(a, b))

  test("equal, and hashed alike, for a plan and its copy through codegen; not for another plan") {
    val plan = ProjectExec(Seq(a), leaf)
    val compiled = WholeStageCodegenExec(ProjectExec(Seq(a), InputAdapter(leaf)))(1)
    assert(CreationRewire.unfiltered(plan) == CreationRewire.unfiltered(compiled))
    assert(CreationRewire.unfiltered(plan).hashCode == CreationRewire.unfiltered(compiled).hashCode)
    assert(Set(CreationRewire.unfiltered(plan)).contains(CreationRewire.unfiltered(compiled)))
    // the same shape, another column: told apart by canonical plans
    assert(CreationRewire.unfiltered(plan) != CreationRewire.unfiltered(ProjectExec(Seq(b), leaf)))
    // another shape
    assert(CreationRewire.unfiltered(plan) != CreationRewire.unfiltered(FilterExec(IsNotNull(a), leaf)))
  }

  test("an exchange with a copy in the plan is shared, asked of either copy or of a copy through codegen; one of " +
      "the same shape over another column is not") {
    def shuffle(col: Attribute, child: SparkPlan) = ShuffleExchangeExec(HashPartitioning(Seq(col), 2), child)
    val first = shuffle(a, ProjectExec(Seq(a), leaf))
    val copy = shuffle(a, ProjectExec(Seq(a), leaf))
    val other = shuffle(b, ProjectExec(Seq(b), leaf))
    val shared = FilterPlans.sharedExchanges(UnionExec(Seq(first, copy, other)))
    assert(shared(first) && shared(copy))
    assert(!shared(other))
    assert(shared(shuffle(a, WholeStageCodegenExec(ProjectExec(Seq(a), InputAdapter(leaf)))(1))))
    assert(!FilterPlans.sharedExchanges(UnionExec(Seq(first, other)))(first))
  }
}

/** A table that is never read. */
private case class RewireLeaf(output: Seq[Attribute]) extends LeafExecNode {
  override protected def doExecute(): RDD[InternalRow] = throw new UnsupportedOperationException
}
