package sieve.dynamicfilter

import java.util.IdentityHashMap

import org.apache.spark.sql.catalyst.expressions.{BindReferences, Expression}
import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.exchange.{Exchange, ReusedExchangeExec}


/**
 * Filters inside an exchange that the plan computes once for several joins (a CTE or a subquery used
 * twice: TPC-DS q4's store_sales shuffle feeds the 2001 and the 2002 branch). [[PlaceDynamicFilters]]
 * does not enter such an exchange for one join: a filter in one copy makes the copies differ, and the
 * table is read twice. Here every copy gets the same filter, fed by the creation sides of the joins above
 * all the copies: a row is kept when one of them has its key. Each copy's rows reach its own join, which
 * drops what its keys do not match, so the union drops only rows no join keeps; the copies stay equal,
 * and computed once (q4: the store_sales rows of 2001 or 2002, read once, instead of all of them).
 *
 * Placed only when every copy of the exchange is in the plan and not run yet (not an AQE stage, nor made one
 * already in the execution), every copy has a join whose keys reach the same scan column in it, and no
 * creation side holds a copy of the exchange it filters, or of one whose filters read such a side (it would
 * wait for itself).
 */
object SharedExchangeFilters extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!PlaceDynamicFilters.active(plan) || !plan.exists(FilterPlans.targetable)) plan
    else FilterPlans.during(plan) {
      val filled = fill(plan, PlaceDynamicFilters.proposals(plan, new PlanFacts(plan, conf), _, _))
      if (filled eq plan) plan
      else CreationRewire(filled).getOrElse {
        logWarning("spark-sieve: filters of shared exchanges in this plan would wait for each other; none placed")
        plan
      }
    }

  /** What a join could put on `target`: a filter of its `keys`, read from `source`; `minScanBytes`: what the
   * scan must read for it to pay, checked again once DPP has run (0: its size does not decide); `below`: the
   * source is a broadcast below the join's creation side, not the join's own ([[KeyLineage.broadcastBelow]]). */
  final case class Proposal(join: SparkPlan, target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      minScanBytes: Long, below: Boolean = false)

  /** `plan` with the filters of `proposals` placed in the copies of shared exchanges (each target with a
   * filter of its keys fed by all the sources, and the least `minScanBytes` of their proposals), and the
   * joins that feed one untagged. `proposals` are asked only of the targets inside a copy and of the joins above
   * one (two predicates). */
  private def fill(plan: SparkPlan, proposals: (SparkPlan => Boolean, SparkPlan => Boolean) => Seq[Proposal])
      : SparkPlan = {
    def put(target: SparkPlan, keys: Seq[Expression], sources: Seq[KeyCollector.Source], minScanBytes: Long) =
      PlaceDynamicFilters.withFilter(target, keys, sources, probedInStage = false, minScanBytes)
    val inPlan = plan.collect { case e: Exchange => e }.groupBy(CreationRewire.unfiltered).filter(_._2.size > 1)
    if (inPlan.isEmpty) return plan
    val everywhere = plan.collectWithSubqueries {
      case s: QueryStageExec => CreationRewire.unfiltered(s.plan)
      case r: ReusedExchangeExec => CreationRewire.unfiltered(r.child)
      case e: Exchange => CreationRewire.unfiltered(e)
    }.groupBy(identity).map { case (k, v) => k -> v.size }
    // every copy here, none a stage, a reuse or in a subquery, nor one AQE puts a stage made already in place of
    // ([[FilterPlans.stageOf]]): then all of them can change alike
    val groups = inPlan.filter { case (k, copies) =>
      everywhere.get(k).contains(copies.size) && copies.forall(FilterPlans.stageOf(_).isEmpty) }
    val nodes = groups.values.flatten.map(c => c -> identitySet(c)).toSeq
    if (nodes.isEmpty) return plan

    // each proposal in the innermost copy that holds its target and not its join
    val byCopy = new IdentityHashMap[SparkPlan, Seq[Proposal]]()
    val copies = identitySet(nodes.map(_._1))
    proposals(target => nodes.exists(_._2.containsKey(target)), join => join.exists(copies.containsKey)).foreach { p =>
      val in = nodes.filter { case (_, set) => set.containsKey(p.target) && !set.containsKey(p.join) }
      if (in.nonEmpty) {
        val copy = in.minBy(_._2.size)._1
        byCopy.put(copy, Option(byCopy.get(copy)).getOrElse(Nil) :+ p)
      }
    }
    val candidates = groups.filter(_._2.exists(byCopy.containsKey)).keySet
    // the exchanges getting such a filter that a creation side holds (a stage or reuse of one is not in
    // `groups`: only its exchanges can be copies), and for each, those its own filters' creation sides hold
    def held(s: KeyCollector.Source): Set[CreationRewire.Unfiltered] =
      s.creation.collect { case e: Exchange => CreationRewire.unfiltered(e) }.filter(candidates.contains).toSet
    val holds: Map[CreationRewire.Unfiltered, Set[CreationRewire.Unfiltered]] = groups.map { case (group, copies) =>
      group -> copies.flatMap(c => Option(byCopy.get(c)).getOrElse(Nil)).flatMap(p => held(p.source)).toSet
    }
    def reaches(from: CreationRewire.Unfiltered, to: CreationRewire.Unfiltered,
        seen: Set[CreationRewire.Unfiltered] = Set.empty): Boolean =
      from == to || (!seen.contains(from) && holds.getOrElse(from, Set.empty).exists(reaches(_, to, seen + from)))
    // a filter in `group` reading a creation side that holds a copy of `group`, or of one whose filters
    // read one that does, would wait for itself; one holding any other such exchange reads it filtered
    // (TPC-DS q64: store_returns' shuffle, filtered by item's keys, feeds store_sales' filter)
    def safe(s: KeyCollector.Source, group: CreationRewire.Unfiltered) = !held(s).exists(reaches(_, group))

    val replace = new IdentityHashMap[SparkPlan, SparkPlan]()
    val feeding = Seq.newBuilder[SparkPlan]
    groups.foreach { case (group, copies) =>
      val orders = copies.map(_.collect { case n => n })
      // (the target's place in its copy, its keys over the target's output) -> the proposals there, per copy
      val at = copies.zip(orders).map { case (c, order) =>
        Option(byCopy.get(c)).getOrElse(Nil).filter(p => safe(p.source, group)).groupBy { p =>
          (order.indexWhere(_ eq p.target), BindReferences.bindReferences(p.keys, p.target.output).map(_.canonicalized))
        }
      }
      val common = at.map(_.keySet).reduce(_ intersect _)
      // a place fed only by broadcasts below the joins' creation sides where no target there gets the joins'
      // own keys in every copy (a copy's own keys may not pay where another's do: a shuffle stage measured)
      val ownAt = common.filter(place => at.forall(_(place).exists(!_.below))).map(_._1)
      val chosen = common.filterNot(place => ownAt.contains(place._1) && at.forall(_(place).forall(_.below)))
      chosen.toSeq.sortBy(_._1).foreach { case place @ (index, _) =>
        val targets = orders.flatMap(_.lift(index))
        val sources = distinct(at.flatMap(_(place)).map(_.source))
        // checked again after DPP only when every join's filter there is sized by the scan
        val minScanBytes = at.flatMap(_(place)).map(_.minScanBytes).min
        val alike = targets.size == copies.size &&
          targets.forall(t => CreationRewire.unfiltered(t) == CreationRewire.unfiltered(targets.head)) &&
          sources.forall(_.read.map(_.dataType) == sources.head.read.map(_.dataType))
        if (alike) {
          // each copy's own proposal gives the keys over its target's attributes
          targets.zip(at).foreach { case (t, here) =>
            replace.put(t, put(Option(replace.get(t)).getOrElse(t), here(place).head.keys, sources, minScanBytes))
          }
          feeding ++= at.flatMap(_(place)).map(_.join)
        }
      }
    }
    if (replace.isEmpty) plan
    else {
      feeding.result().foreach(_.unsetTagValue(FilterPlans.NoFilter))
      plan.transformUp { case n if replace.containsKey(n) => replace.get(n) }
    }
  }

  private def identitySet(plan: SparkPlan): IdentityHashMap[SparkPlan, java.lang.Boolean] =
    identitySet(plan.collect { case n => n })

  private def identitySet(nodes: Seq[SparkPlan]): IdentityHashMap[SparkPlan, java.lang.Boolean] = {
    val set = new IdentityHashMap[SparkPlan, java.lang.Boolean]()
    nodes.foreach(n => set.put(n, true))
    set
  }

  /** The sources once each, in order: the same creation side with the same keys is one. */
  private def distinct(sources: Seq[KeyCollector.Source]): Seq[KeyCollector.Source] =
    sources.foldLeft(Vector.empty[KeyCollector.Source]) { (kept, s) =>
      def same(o: KeyCollector.Source) = o.broadcast == s.broadcast && o.picks == s.picks &&
        CreationRewire.unfiltered(o.creation) == CreationRewire.unfiltered(s.creation) &&
        o.keys.map(QueryPlan.normalizeExpressions(_, o.creation.output)) ==
          s.keys.map(QueryPlan.normalizeExpressions(_, s.creation.output))
      if (kept.exists(same)) kept else kept :+ s
    }
}
