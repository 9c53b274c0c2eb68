package sieve.dynamicfilter

import scala.util.hashing.MurmurHash3

import org.apache.spark.sql.execution.{InputAdapter, SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, AQEShuffleReadExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

import sieve.plan.PlanMemo

/**
 * Keeps each dynamic filter reading its keys from the very exchange its join reads (or the very side, for keys
 * computed from it: [[ComputedKeys]]). A filter is wired to
 * its join's creation-side exchange when that join is placed; a join placed later (higher up) may then
 * put a filter inside that exchange (its keys reach a scan below it), and the join's side changes while
 * the first filter still holds the old copy: two plans, computed twice, the first filter's keys from the
 * unfiltered one. Here each filter's creation becomes the join-side exchange it is a copy of (equal but
 * for the dynamic filters inside), until no filter changes (nested chains settle one level a round).
 * A plan that has not settled after `MaxRounds` holds filters that wait for each other (each copy holds
 * the other): None, and the caller keeps the plan without filters.
 */
object CreationRewire {
  private val MaxRounds = 16

  /** What `plan` computes but for its dynamic filters' pruning — and but for what only changes how it runs (a
   * copy inside a finished AQE stage went through codegen, AQE may put a coalescing read into the join's copy,
   * a scan may wait for DPP's broadcasts): equal for plans canonically equal once those are left out. */
  def unfiltered(plan: SparkPlan): Unfiltered = new Unfiltered(plan)

  /** [[unfiltered]]'s answer. Hashed by the plan's shape — its nodes' classes, seen through what is left out and
   * through stages and reuses as canonicalization sees through them — so that most comparisons are settled
   * without canonicalizing the plans: AQE plans a query again after each stage, with new nodes each time, and
   * canonicalizing every exchange of each plan was a third of the rules' planning time (JFR, TPC-H q14). */
  final class Unfiltered private[CreationRewire] (private val plan: SparkPlan) {
    private lazy val canonical = unfilteredOf(plan)
    override val hashCode: Int = shapeOf(plan)
    override def equals(other: Any): Boolean = other match {
      case o: Unfiltered => (o.plan eq plan) || (o.hashCode == hashCode && o.canonical == canonical)
      case _ => false
    }
  }

  private val shapeOf: PlanMemo.NodeMemo[SparkPlan, Int] = new PlanMemo.NodeMemo[SparkPlan, Int]("sieve.shape", {
    case f: DynamicFilterExec => shapeOf(f.child)
    case a: AwaitBroadcastsExec => shapeOf(a.child)
    case r: AQEShuffleReadExec => shapeOf(r.child)
    case w: WholeStageCodegenExec => shapeOf(w.child)
    case i: InputAdapter => shapeOf(i.child)
    case s: QueryStageExec => shapeOf(s.plan)
    case r: ReusedExchangeExec => shapeOf(r.child)
    case a: AdaptiveSparkPlanExec => shapeOf(a.inputPlan)
    case p => MurmurHash3.orderedHash(p.children.map(shapeOf(_)), p.getClass.getName.hashCode)
  })

  private val unfilteredOf = new PlanMemo.NodeMemo[SparkPlan, SparkPlan]("sieve.unfiltered", _.transformUp {
    case f: DynamicFilterExec => f.child
    case a: AwaitBroadcastsExec => a.child
    case r: AQEShuffleReadExec => r.child
    case w: WholeStageCodegenExec => w.child
    case i: InputAdapter => i.child
  }.canonicalized)

  def apply(plan: SparkPlan): Option[SparkPlan] =
    if (!plan.exists(_.isInstanceOf[DynamicFilterExec]) || wiredAlready(plan)) Some(plan) else settle(plan)

  /** Whether each filter's creation is one of the plan's join sides itself (the same node): nothing to rewire, and
   * no side hashed nor compared — the common case, a filter wired to its join's exchange as it was placed. */
  private def wiredAlready(plan: SparkPlan): Boolean = {
    val sides = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[SparkPlan, java.lang.Boolean]())
    joinSides(plan).foreach(sides.add)
    plan.collect { case f: DynamicFilterExec => f.creations }.flatten.forall(sides.contains)
  }

  /** What the plan's joins read a filter's keys from: their exchanges, and the sides keys are computed from. */
  private def joinSides(plan: SparkPlan): Seq[SparkPlan] =
    plan.collect { case EquiJoin(j) => j.leftExchange.toSeq ++ j.rightExchange ++ computed(j) }.flatten

  private def settle(plan: SparkPlan): Option[SparkPlan] = {
    var current = plan
    var round = 0
    var changed = true
    while (changed && round < MaxRounds) {
      // by output attributes too, compared first (a tuple's equality stops at its first unequal part): a CTE used
      // twice gives canonically equal sides with other attributes, which the filter's keys do not bind to
      val sides = joinSides(current).map(e => (e.output.map(_.exprId), unfiltered(e)) -> e).toMap
      changed = false
      current = current.transformUp {
        case f: DynamicFilterExec =>
          val rewired = f.creations.map(c =>
            sides.get((c.output.map(_.exprId), unfiltered(c))).filterNot(_ == c).getOrElse(c))
          if (rewired.zip(f.creations).forall { case (a, b) => a eq b }) f
          else { changed = true; f.withCreations(rewired) }
      }
      round += 1
    }
    if (changed) None else Some(current)
  }

  /** A shuffled join's sides without an exchange of their own, as a creation side computed from them is wired
   * ([[ComputedKeys]]). */
  private def computed(j: EquiJoin): Seq[SparkPlan] =
    if (j.broadcast) Nil
    else Seq(j.left -> j.leftExchange, j.right -> j.rightExchange).collect { case (side, None) => side }
      .flatMap(ComputedKeys.of)
}
