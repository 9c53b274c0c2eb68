package sieve.plan

import java.lang.ref.WeakReference
import java.util.IdentityHashMap

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.trees.{TreeNode, TreeNodeTag}
import org.apache.spark.sql.execution.SQLExecution

/**
 * Values the placement of dynamic filters derives from plan nodes, each computed once per run of it: a
 * node is immutable, and the placement asks the same questions of the same nodes again and again (each
 * join, each walk, each check) — a quarter of TPC-DS q68's planning time went to that (JFR:
 * `CreationRewire.unfiltered`'s walk of an exchange's subtree, a scan's listed bytes). Remembered by node
 * identity, only while a run lasts (outside one, each call computes), on the thread that runs it.
 */
object PlanMemo {
  private val run = new ThreadLocal[IdentityHashMap[Memo[_, _], IdentityHashMap[AnyRef, Any]]]

  /** `body` with every [[Memo]] remembering its values until it returns (nested: the outer run's). */
  def during[T](body: => T): T =
    if (run.get != null) body
    else {
      run.set(new IdentityHashMap())
      try body finally run.remove()
    }

  /** `compute`, remembered per node during a run. */
  final class Memo[K <: AnyRef, V](compute: K => V) {
    def apply(node: K): V = run.get match {
      case null => compute(node)
      case memos =>
        val values = memos.computeIfAbsent(this, _ => new IdentityHashMap[AnyRef, Any]())
        if (values.containsKey(node)) values.get(node).asInstanceOf[V]
        else {
          val v = compute(node)
          values.put(node, v)
          v
        }
    }
  }

  /** `compute`, remembered per node for as long as the SQL execution that asks lasts (outside one, as [[Memo]]):
   * for values of what an execution does not change, asked again at each of AQE's plans of it — a table's listed
   * bytes, summed over each of its files (TPC-DS q58 partitioned, 1,823 files a fact: a quarter of the rules'
   * planning time). Only the last [[Executions]] executions' values are kept. */
  final class ExecutionMemo[K <: AnyRef, V](compute: K => V, execution: () => Option[String] = () => executionId) {
    private val memo = new Memo(compute)
    private val byExecution = new java.util.LinkedHashMap[String, IdentityHashMap[K, V]](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[String, IdentityHashMap[K, V]]): Boolean =
        size() > Executions
    }

    def apply(node: K): V = execution() match {
      case None => memo(node)
      case Some(id) =>
        val known = byExecution.synchronized(Option(byExecution.get(id)).filter(_.containsKey(node)).map(_.get(node)))
        known.getOrElse {
          val v = memo(node)
          byExecution.synchronized(byExecution.computeIfAbsent(id, _ => new IdentityHashMap[K, V]()).put(node, v))
          v
        }
    }
  }

  private val Executions = 8

  /** The SQL execution planning runs in (AQE plans again within it; its first plan is made before it has an id). */
  def executionId: Option[String] = SparkSession.getActiveSession
    .flatMap(s => Option(s.sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)))

  /** `compute`, remembered on the node itself for as long as it lives, for values of its subtree alone: AQE
   * plans a query again after each stage, and each plan holds the stages made so far as they are, so the
   * placement asks the same of them at each plan (TPC-DS q71 partitioned: 5-17 ms a plan canonicalizing the
   * stages' exchanges). Kept in a tag that names the node it was computed for: a copy of a node takes its
   * tags, but not the answer (its children may differ). */
  final class NodeMemo[K <: TreeNode[_], V](name: String, compute: K => V) {
    private val tag = TreeNodeTag[(WeakReference[AnyRef], V)](name)

    def apply(node: K): V = tagged(node.getTagValue(tag)) match {
      case Some((of, v)) if of.get eq node => v
      case _ =>
        val v = compute(node)
        tagged(node.setTagValue(tag, (new WeakReference[AnyRef](node), v)))
        v
    }
  }

  /** `body`, reading or writing a memo's tag on a node: under one lock of its own, never the node's monitor,
   * which Spark holds while it prepares the node to run (an exchange's stage: its whole subtree, a dynamic filter
   * waiting for its keys included) — a planner waiting on it waited for those keys (TPC-DS q72: ~330 ms of AQE's
   * plans in each run, JFR's monitor events). */
  def tagged[T](body: => T): T = TagLock.synchronized(body)

  private object TagLock
}
