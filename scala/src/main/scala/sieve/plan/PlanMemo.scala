package sieve.plan

import java.lang.ref.WeakReference
import java.util.IdentityHashMap

import org.apache.spark.sql.catalyst.trees.{TreeNode, TreeNodeTag}

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
