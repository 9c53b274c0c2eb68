package sieve.plan

import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.{LeafExecNode, ProjectExec, SparkPlan}
import org.apache.spark.sql.types.LongType
import org.scalatest.funsuite.AnyFunSuite

class PlanMemoSuite extends AnyFunSuite {
  private val a = AttributeReference("a", LongType)()
  private val b = AttributeReference("b", LongType)()

  test("NodeMemo computes once per node, again for a copy that took the node's tags") {
    var computed = 0
    val memo = new PlanMemo.NodeMemo[SparkPlan, Int]("sieve.test.leaves", p => { computed += 1; p.collectLeaves().size })
    val plan = ProjectExec(Seq(a), Leaf(Seq(a)))
    assert(memo(plan) === 1 && memo(plan) === 1)
    assert(computed === 1)
    // a copy with another child takes the tags of the node it copies (transformUp), never its answer
    val copy = plan.transformUp { case _: Leaf => Leaf(Seq(a, b)) }
    assert(copy ne plan)
    assert(memo(copy) === 1)
    assert(computed === 2)
    assert(memo(plan) === 1 && computed === 2)
  }

  test("ExecutionMemo computes once per node in an execution, again in another, each time outside both") {
    var (computed, execution) = (0, Option("1"))
    val memo = new PlanMemo.ExecutionMemo[SparkPlan, Int](p => { computed += 1; p.collectLeaves().size }, () => execution)
    val plan = ProjectExec(Seq(a), Leaf(Seq(a)))
    assert(memo(plan) === 1 && memo(plan) === 1 && computed === 1)
    // an equal node is another node: identity, as the listing behind it may be another
    assert(memo(ProjectExec(Seq(a), Leaf(Seq(a)))) === 1 && computed === 2)
    execution = Some("2")
    assert(memo(plan) === 1 && computed === 3)
    // outside an execution (AQE's first plan is made before its id) and a rule's run: each call computes
    execution = None
    assert(memo(plan) === 1 && memo(plan) === 1 && computed === 5)
    // only the last executions' values are kept
    (3 to 20).foreach { i => execution = Some(i.toString); memo(plan) }
    execution = Some("1")
    val before = computed
    memo(plan)
    assert(computed === before + 1)
  }

  test("NodeMemo reads and writes its tag without the node's monitor, which Spark holds while it prepares the node") {
    val memo = new PlanMemo.NodeMemo[SparkPlan, Int]("sieve.test.monitor", _.collectLeaves().size)
    val plan = ProjectExec(Seq(a), Leaf(Seq(a)))
    plan.collectLeaves() // its lazy values, as a node being prepared has them (their first read takes the monitor)
    val (held, release) = (new CountDownLatch(1), new CountDownLatch(1))
    // as SparkPlan.prepare does while a stage's subtree waits (a dynamic filter's keys)
    val holder = new Thread(() => plan.synchronized { held.countDown(); release.await(30, TimeUnit.SECONDS) })
    holder.start()
    try {
      assert(held.await(10, TimeUnit.SECONDS))
      val asked = Future(memo(plan))(ExecutionContext.global)
      assert(Await.result(asked, 5.seconds) === 1)
    } finally {
      release.countDown()
      holder.join()
    }
  }
}

/** A leaf that is never run (LocalTableScanExec's fields differ between Spark lines). */
private case class Leaf(output: Seq[Attribute]) extends LeafExecNode {
  override protected def doExecute(): RDD[InternalRow] = throw new UnsupportedOperationException
}
