package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.{ExistenceJoin, Inner, JoinType, LeftAnti, LeftOuter, LeftSemi, QueryPlan, RightOuter}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

import sieve.config.SieveConf
import sieve.dynamicfilter.DynamicFilterBenefit.{Decline, Place}
import sieve.dynamicfilter.FilterPlans._
import sieve.plan.{PlanMemo, Preconditions}

/**
 * Where dynamic filters go (the "dynamic filter metadata" of seeds/002), decided on the physical plan once
 * exchanges are in it (after EnsureRequirements: the optimized and planned plan is vanilla Spark's, DPP and
 * the runtime bloom filter included). Whether each pays is [[DynamicFilterBenefit]]'s question; the rules
 * that run after this one trim filters of whole tables ([[TrimWholeTableFilters]]), fill exchanges the plan
 * computes once for several joins ([[SharedExchangeFilters]]) and make scans wait for DPP
 * ([[AwaitPartitionPruning]]). A filter goes on a scan when:
 *  1. its join is an equi-join that can drop rows of that side (the application side): an inner join (the
 *     larger side first), either side of a left-semi join, the right side of an anti or existence join, the
 *     non-preserved side of an outer join;
 *  2. its keys are deterministic and byte-comparable (no non-binary collation: [[Preconditions]]);
 *  3. the creation side is an exchange Spark computes once for the join and the filter (its broadcast, the
 *     shuffle under its sort, or — a shuffled side partitioned already — the shuffle below it, or an aggregate
 *     over that shuffle whose keys a job computes again from it: [[ComputedKeys]]), shared for certain, and not
 *     waiting for this side's keys itself ([[FilterPlans.waitsFor]]);
 *  4. the application keys reach the scan ([[KeyLineage]]: through projections, filters, other joins,
 *     aggregates, windows and unions; a file scan or a cached table, not inside an exchange with copies
 *     nor an AQE stage made already);
 *  5. it pays ([[DynamicFilterBenefit.atPlacement]]).
 * All filters on one scan share one [[DynamicFilterExec]]; one join's filters sit on one side only (each
 * side's would wait for the other's keys). A broadcast join's keys may also filter a broadcast build side
 * below them when another filter reads that broadcast's keys (it makes them fewer), and a shuffled join's
 * keys may come from a broadcast below its creation side ([[KeyLineage.broadcastBelow]]). A join that gets
 * none is tagged with the reason ([[FilterPlans.NoFilter]], shown by `spark_sieve.explain`).
 *
 * Runs as an AQE query-stage preparation rule (at each of AQE's plans; one whose scans are all in stages made
 * already is left as it is) and, without AQE, before columnar transitions. A filter there already is not
 * added again, so running twice changes nothing.
 */
object PlaceDynamicFilters extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = FilterPlans.during(plan)(place(plan))

  /** Whether the dynamic-filter rules have anything to do on `plan`. */
  private[dynamicfilter] def active(plan: SparkPlan): Boolean =
    SieveConf.enabled(conf) && SieveConf.DYNAMIC_FILTER_ENABLED.get(conf) && plan.exists(EquiJoin.unapply(_).isDefined)

  private def place(plan: SparkPlan): SparkPlan =
    if (!active(plan)) plan
    else if (!plan.exists(targetable)) keepReasons(plan)
    else {
      val facts = new PlanFacts(plan, conf)
      plan.foreach { case s: FileSourceScanExec => s.unsetTagValue(AwaitPartitionPruning.Awaits); case _ => }
      // the joins the first walk declined, each node with the creation sides its filters would read
      val declined = new java.util.IdentityHashMap[SparkPlan, Set[CreationRewire.Unfiltered]]()
      def pass(p: SparkPlan, awaited: Set[(CreationRewire.Unfiltered, Seq[Int])], again: SparkPlan => Boolean) =
        CreationRewire(p.transformUp { case EquiJoin(j) if again(j.join) => filterFor(j, facts, awaited, declined) })
      // again when the first walk placed a filter: a join's creation side filtered by a join above it (placed
      // after it, bottom-up) is selective the second time (TPC-DS q93), and keys a filter placed waits for cost
      // another filter no wait (TPC-H q18). A plan the first walk left alone is not walked twice; nor is a join
      // it declined whose subtree is as it was (the same node) and whose creation sides no new filter reads:
      // it would be declined again (a walk is most of the rules' planning time, and AQE plans a query again
      // after each stage: TPC-DS q72, 14 plans)
      val awaited = awaitedKeys(plan)
      val result = for {
        once <- pass(plan, awaited, _ => true)
        twice <- if (once eq plan) Some(once) else {
          val awaitedOnce = awaitedKeys(once)
          val newlyRead = (awaitedOnce -- awaited).map(_._1)
          pass(once, awaitedOnce, join => Option(declined.get(join)).forall(_.exists(newlyRead.contains)))
        }
      } yield twice
      result.getOrElse {
        // filters that wait for each other (which `waitsFor` should have refused): none at all, never a
        // plan that cannot run
        logWarning("spark-sieve: dynamic filters of this plan wait for each other; the plan keeps none")
        plan.foreach { case s: FileSourceScanExec => s.unsetTagValue(AwaitPartitionPruning.Awaits); case _ => }
        plan
      }
    }

  /** A plan whose scans are all inside stages made already (AQE plans the query again after each stage,
   * ~10 times for TPC-DS q68, and a walk costs tens of ms there): no filter can be placed, so no walk; each
   * join keeps the reason its logical join was given while its scans were in the plan. */
  private def keepReasons(plan: SparkPlan): SparkPlan = { plan.foreach { case EquiJoin(j) => keepReason(j); case _ => }; plan }

  /** `j`, whose scans are all inside stages made already, with the reason its logical join was given. */
  private def keepReason(j: EquiJoin): SparkPlan = {
    if (filteredAlready(j)) j.join.unsetTagValue(NoFilter)
    else j.join.setTagValue(NoFilter, j.join.logicalLink.flatMap(_.getTagValue(NoFilter)).getOrElse(NoScan))
    j.join
  }

  private val NoScan = "its keys reach no file scan or cached table on the application side"
  /** A side of a join that a filter may go on: its keys, and the creation side the filter reads (`below`: a
   * broadcast below the join's shuffled creation side, [[KeyLineage.broadcastBelow]]; not the join's own). */
  private final case class Application(appIsLeft: Boolean, app: SparkPlan, keys: Seq[Expression],
      source: KeyCollector.Source, below: Boolean = false) {
    /** A reason this application was declined, saying where its keys come from. */
    def why(reason: String): String = if (below) fromBelow(reason) else reason
  }

  private def fromBelow(reason: String) = s"keys of the broadcast below its creation side: $reason"

  /** Where `j`'s filters may go (the preferred side first), each reason a side may not be given to `why`. */
  private def applications(j: EquiJoin, why: String => Unit): Seq[Application] = {
    val keys = j.leftKeys ++ j.rightKeys
    val sides = applicationSides(j)
    if (!keys.forall(k => Preconditions.deterministic(k) && Preconditions.binaryStable(k.dataType))) {
      why("a key is nondeterministic or not byte-comparable (a non-binary collation)"); Nil
    } else if (sides.isEmpty) {
      why(if (Seq(true, false).exists(dropsRowsOf(j.joinType, _))) s"${j.joinType} join: the side whose rows it " +
        "drops is its broadcast build side (the streamed side has no exchange to read keys from)"
        else s"${j.joinType} join: no side whose rows it drops")
      Nil
    }
    // a side whose creation side is the join's own exchange first: the shuffle below a side holds more
    // keys than the join's (TPC-DS q32: the item keys of the outer query filter the subquery's
    // catalog_sales; the other way, the subquery's aggregate would give every item it sold)
    else {
      val ordered = sides.sortBy(appIsLeft => (if (appIsLeft) j.rightExchange else j.leftExchange).isEmpty)
      // a side's own creation side first, each side's; then the broadcasts below them
      ordered.flatMap(ownCreation(j, _, why)) ++ ordered.flatMap(broadcastBelow(j, _))
    }
  }

  /** `j`'s sides as a filter on the `appIsLeft` one sees them: (application side, its keys, exchange), (creation
   * side, its keys, exchange). */
  private final case class Sides(app: SparkPlan, appKeys: Seq[Expression], appExchange: Option[SparkPlan],
      creation: SparkPlan, creationKeys: Seq[Expression], creationExchange: Option[SparkPlan])
  private def sidesOf(j: EquiJoin, appIsLeft: Boolean): Sides =
    if (appIsLeft) Sides(j.left, j.leftKeys, j.leftExchange, j.right, j.rightKeys, j.rightExchange)
    else Sides(j.right, j.rightKeys, j.rightExchange, j.left, j.leftKeys, j.leftExchange)

  /** `j`'s `appIsLeft` side, filtered by the keys of the exchange the join reads the other side through. */
  private def ownCreation(j: EquiJoin, appIsLeft: Boolean, why: String => Unit): Option[Application] = {
    val s = sidesOf(j, appIsLeft)
    // the join's own exchange, else (a shuffled join's side partitioned already) the shuffle below it, else
    // an aggregate over that shuffle whose keys a job computes
    s.creationExchange.map(e => (e, s.creationKeys, j.broadcast))
      .orElse(if (j.broadcast) None
              else KeyLineage.shuffleBelow(s.creation, s.creationKeys).map { case (e, ks) => (e, ks, false) }
                .orElse(ComputedKeys.of(s.creation).map(c => (c, s.creationKeys, false)))) match {
      case None => why("no exchange on the creation side to read keys from, nor an aggregate over one whose keys " +
        "a job can compute again alike"); None
      case Some((creation, _, _)) if !Preconditions.sharedForCertain(creation, conf) =>
        why("the creation side is not computed once for certain (exchange reuse off, or nondeterministic)"); None
      case Some((creation, _, _)) if s.appExchange.exists(waitsFor(creation, _)) =>
        why(WaitsForThisSide); None
      case Some((creation, keys, broadcast)) =>
        Some(Application(appIsLeft, s.app, s.appKeys, KeyCollector.Source(creation, keys, broadcast)))
    }
  }

  /** `j`'s `appIsLeft` side, filtered by the keys of a broadcast below the shuffled other side (some of its keys
   * are always one of that broadcast's keys): for when the join's own keys give no filter there. */
  private def broadcastBelow(j: EquiJoin, appIsLeft: Boolean): Option[Application] =
    if (j.broadcast || !SieveConf.DYNAMIC_FILTER_KEYS_FROM_BROADCAST_BELOW.get(conf)) None
    else {
      val s = sidesOf(j, appIsLeft)
      KeyLineage.broadcastBelow(s.creation, s.creationKeys).collect {
        case (broadcast, buildKeys, pairs) if Preconditions.sharedForCertain(broadcast, conf) &&
            !s.appExchange.exists(waitsFor(broadcast, _)) =>
          Application(appIsLeft, s.app, pairs.map(p => s.appKeys(p._1)),
            KeyCollector.Source(broadcast, buildKeys, broadcast = true, pairs.map(_._2)), below = true)
      }
    }

  private val WaitsForThisSide = "the creation side waits for this side's keys already (a filter the other way)"

  /** The join with its filters placed, or tagged with why it has none (`awaited`: [[awaitedKeys]] of the plan
   * this walk began from), put in `declined` then with the creation sides it tried. */
  private def filterFor(j: EquiJoin, facts: PlanFacts, awaited: Set[(CreationRewire.Unfiltered, Seq[Int])],
      declined: java.util.IdentityHashMap[SparkPlan, Set[CreationRewire.Unfiltered]]): SparkPlan = {
    val reasons = Seq.newBuilder[String]
    var reached = false // a scan outside shared exchanges (else the reason is that they hold its scans)
    // kept on the logical join too: AQE plans a join again once stages below it have run, and KeyLineage
    // does not enter those stages — the reason given while their scans were in the plan still holds
    def decline(why: String): SparkPlan = { tagNoFilter(j.join, why); j.join }
    // (a join above stages only, as AQE plans again after each: no scan to filter, no walk — the rules' time in
    // short queries, TPC-DS q83's three subqueries joined at the top)
    if (!j.join.exists(targetable)) { declined.put(j.join, Set.empty); return keepReason(j) }
    val tried = applications(j, reasons += _)
    val placed = tried.iterator.map { a =>
      KeyLineage.place(a.app, a.keys, facts.shared, feeds(a.app, j, facts.dppTables)) { (target, targetKeys, picks, route) =>
        // (a side's keys computed again are a fallback: what the join's own exchanges reach says why not first)
        if (!a.source.computed) reached = true
        val picked = picks.map(a.source.picks)
        val source = a.source.copy(picks = picked,
          awaited = awaited.contains((CreationRewire.unfiltered(a.source.creation), picked)))
        // (a side without an exchange of its own: the exchanges between it and the target)
        if (route.exchanges.exists(waitsFor(source.creation, _))) {
          reasons += a.why(WaitsForThisSide); None
        } else {
          // (a broadcast below the creation side is not the one this join probes the target's rows with)
          val probedInStage = source.broadcast && ((!a.below && !route.apart && !route.feeding &&
            !route.afterRowProbe) || probedWithTheSameBroadcast(route, targetKeys, source))
          DynamicFilterBenefit.atPlacement(target, targetKeys, source, route, facts, probedInStage) match {
            case Decline(why, awaitDpp) =>
              awaitDpp.foreach(_.setTagValue(AwaitPartitionPruning.Awaits, ()))
              reasons += a.why(why); None
            case Place => waitBound(target, targetKeys, source, route, probedInStage) match {
              case Left(why) => reasons += a.why(why); None
              case Right(bound) => Some(withFilter(target, targetKeys, Seq(source), probedInStage,
                DynamicFilterBenefit.runTimeLeast(route).bytes.toLong, bound))
            }
          }
        }
      }.map { newApp =>
        val filtered = j.join.withNewChildren(if (a.appIsLeft) Seq(newApp, j.right) else Seq(j.left, newApp))
        filtered.unsetTagValue(NoFilter)
        filtered
      }
    }.collectFirst { case Some(p) => p }
    placed.getOrElse {
      declined.put(j.join, tried.map(a => CreationRewire.unfiltered(a.source.creation)).toSet)
      if (filteredAlready(j)) { j.join.unsetTagValue(NoFilter); j.join }
      else {
        val why = ((if (reached) None else throughSharedOnly(j, facts)).toSeq ++ reasons.result()).distinct
        decline(if (why.nonEmpty) why.mkString("; ") else j.join.logicalLink.flatMap(_.getTagValue(NoFilter))
          .getOrElse(NoScan))
      }
    }
  }

  /** Whether an inner or semi broadcast hash join between the target and its stage's exchange above it
   * ([[KeyLineage.Route.probes]]) probes each of the target's rows, as they are read, with `source`'s broadcast
   * on the same keys, dropping those without a match: a test per row would repeat that probe (TPC-H q20: part's
   * keys, read below partsupp's shuffle, for lineitem, whose own semi join with part drops the same rows before
   * its aggregate; tested, 0.70-0.96x). */
  private def probedWithTheSameBroadcast(route: KeyLineage.Route, targetKeys: Seq[Expression],
      source: KeyCollector.Source): Boolean = {
    val creation = CreationRewire.unfiltered(source.creation)
    val wanted = source.picks.map(i => QueryPlan.normalizeExpressions(source.keys(i), source.creation.output))
    route.probes.exists(p => CreationRewire.unfiltered(p.broadcast) == creation && wanted.zip(targetKeys).forall {
      case (w, t) => p.buildKeys.indices.exists(i =>
        QueryPlan.normalizeExpressions(p.buildKeys(i), p.broadcast.output).semanticEquals(w) &&
          p.probed(i).semanticEquals(t))
    })
  }

  /** Why not, when `j`'s keys reach scans only inside exchanges that several joins read (which `filterFor`
   * does not enter; [[SharedExchangeFilters]] fills them when every copy has a join whose filter pays). */
  private def throughSharedOnly(j: EquiJoin, facts: PlanFacts): Option[String] = {
    val found = reachedThroughShared(j, (target, keys, source, route) =>
      DynamicFilterBenefit.pays(target, keys, source, route, facts, probedInStage = false) match {
        case Decline(why, _) => Some(if (belowCreation(j, source)) fromBelow(why) else why)
        case Place => None
      })
    if (found.isEmpty) None
    else Some("its keys reach scans only inside an exchange that several joins read (a filter there goes " +
      "into every copy, fed by a join above each)" + found.flatten.distinct.map("; " + _).mkString)
  }

  /** What `check` says of each scan `j`'s keys reach, shared exchanges crossed (None: a filter pays there). */
  private def reachedThroughShared[T](j: EquiJoin,
      check: (SparkPlan, Seq[Expression], KeyCollector.Source, KeyLineage.Route) => T): Seq[T] =
    applications(j, _ => ()).flatMap { a =>
      val found = Seq.newBuilder[T]
      KeyLineage.place(a.app, a.keys, _ => false, _ => false) { (target, keys, picks, route) =>
        found += check(target, keys, a.source.copy(picks = picks.map(a.source.picks)), route)
        None
      }
      found.result()
    }

  /** The sources the dynamic filters in `plan` (also inside its stages) read: each creation side without its
   * filters ([[CreationRewire.unfiltered]]), with the positions of the keys read. */
  private def sourcesIn(plan: SparkPlan): Seq[(CreationRewire.Unfiltered, Seq[Int])] = sourcesOf(plan)

  // (of its subtree alone, asked of each declined join's sides at each of AQE's plans: a stage's, once)
  private val sourcesOf: PlanMemo.NodeMemo[SparkPlan, Seq[(CreationRewire.Unfiltered, Seq[Int])]] =
    new PlanMemo.NodeMemo("sieve.dynamicFilterSources", {
      case f: DynamicFilterExec =>
        f.filters.flatMap(_.sources.map(s => (CreationRewire.unfiltered(s.creation), s.picks))) ++
          f.children.flatMap(sourcesIn)
      case s: QueryStageExec => sourcesIn(s.plan)
      case r: ReusedExchangeExec => sourcesIn(r.child)
      case other => other.children.flatMap(sourcesIn)
    })

  /** The keys a filter in `plan` waits for already: one collection serves every filter reading them within an
   * execution ([[KeyCollector.collectOnce]]; TPC-H q18: lineitem's and orders' filters by the same computed
   * keys, of two semi joins), so another filter of them pays no wait. Found by the second walk, or by AQE's
   * next plan, when both are placed in one. */
  private def awaitedKeys(plan: SparkPlan): Set[(CreationRewire.Unfiltered, Seq[Int])] = sourcesIn(plan).toSet

  /** Whether a filter reading one of `j`'s sides (or a broadcast below one) is there already, in a stage AQE
   * made before this run (KeyLineage does not enter a stage made already, so it finds no scan to filter now). */
  private def filteredAlready(j: EquiJoin): Boolean = {
    def find(p: SparkPlan, sides: Set[CreationRewire.Unfiltered]): Boolean = sourcesIn(p).exists(s => sides.contains(s._1))
    val own = (j.leftExchange ++ j.rightExchange).map(CreationRewire.unfiltered).toSet
    // a broadcast below one side, read by a filter in the other (also of a join AQE made a broadcast join
    // once the filter had shrunk that side: TPC-DS q75's returns)
    def below(creation: SparkPlan, keys: Seq[Expression], app: SparkPlan) =
      KeyLineage.broadcastBelow(creation, keys).exists(b => find(app, Set(CreationRewire.unfiltered(b._1))))
    (own.nonEmpty && find(j.join, own)) || below(j.left, j.leftKeys, j.right) || below(j.right, j.rightKeys, j.left)
  }

  /** What a join's keys could filter inside exchanges that have copies (which `filterFor` does not enter):
   * the scans there (`inCopy`) its keys reach where a filter pays, for [[SharedExchangeFilters]]. Only joins
   * above a copy (`aboveCopy`) are asked: no other join's keys reach into one (that rule's CPU, TPC-DS sf1 sorted,
   * a query's AQE plans: q14 111 -> 93 ms, q64 75 -> 59 ms, q23 28 -> 21 ms). */
  private[dynamicfilter] def proposals(plan: SparkPlan, facts: PlanFacts, inCopy: SparkPlan => Boolean,
      aboveCopy: SparkPlan => Boolean): Seq[SharedExchangeFilters.Proposal] =
    plan.collect { case EquiJoin(j) if aboveCopy(j.join) => j }.flatMap { j =>
      reachedThroughShared(j, (target, keys, source, route) =>
        if (inCopy(target) && DynamicFilterBenefit.atPlacement(target, keys, source, route, facts, probedInStage = false)
            .orElse(DynamicFilterBenefit.keepsNearlyAll(target, keys, source)) == Place)
          Some(SharedExchangeFilters.Proposal(j.join, target, keys, source,
            DynamicFilterBenefit.runTimeLeast(route).bytes.toLong, below = belowCreation(j, source)))
        else None).flatten
    }

  /** Whether `source` is a broadcast below `j`'s creation side ([[broadcastBelow]]), not the join's own. */
  private def belowCreation(j: EquiJoin, source: KeyCollector.Source): Boolean = source.broadcast && !j.broadcast

  /** Whether the rules run as AQE's (not [[DynamicFiltersWithoutAqe]]): only there does a scan's stage start
   * once the stages it reads have run, so that a bound can end its wait ([[WaitBoundExec]]). */
  private[dynamicfilter] val underAqe = new scala.util.DynamicVariable(true)

  /** The bound of the wait for `source`'s keys of a filter placed on `target` ([[WaitBoundExec]]; None where it
   * waits for nothing of its own, or not under AQE), or why it is declined: as AQE plans again, its scan's wait
   * has cost more than it saves already. */
  private def waitBound(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      route: KeyLineage.Route, probedInStage: Boolean): Either[String, Option[SparkPlan]] =
    if (!underAqe.value) Right(None)
    else DynamicFilterBenefit.waitBudget(target, keys, source, route, probedInStage) match {
      case None => Right(None)
      case Some(budget) =>
        val scan = scanOf(target)
        val key = WaitBound.keyOf(scan)
        val rate = SieveConf.DYNAMIC_FILTER_IDLE_CORE_SECOND_BYTES.get(conf)
        WaitBound.spent(PlanMemo.executionId, key, rate) match {
          case Some(spent) if spent >= budget => Left(s"${nameOf(scan)} waited for its keys while the cores it " +
            s"would use stood idle, at a cost of $spent bytes of reading (idleCoreSecondBytes: $rate), more than " +
            s"the $budget it saves: the wait was ended" +
            SieveConf.DYNAMIC_FILTER_IDLE_CORE_SECOND_BYTES.wouldPlace(s"< ${BigInt(rate) * budget / spent}"))
          case _ => Right(Some(WaitBoundExec(key, budget, KeyWait.coresOf(scan), rate)(
            exchangesRead(source.creation))))
        }
    }

  // (a filter in the copies of a shared exchange: not probed in stage)
  private[dynamicfilter] def withFilter(target: SparkPlan, keys: Seq[Expression], placed: Seq[KeyCollector.Source],
      probedInStage: Boolean, minScanBytes: Long, bound: Option[SparkPlan] = None): SparkPlan = {
    // (whether a source was awaited is of its placement, not of the filter: copies stay canonically equal)
    val sources = placed.map(_.copy(awaited = false))
    target match {
      case f: DynamicFilterExec =>
        if (f.has(keys, sources.map(_.creation))) f else f.and(keys, sources, probedInStage, minScanBytes, bound)
      case _ =>
        val f = DynamicFilterExec(target, keys, sources, probedInStage, minScanBytes, bound)
        // AQE maps a stage back to the logical plan by the first logical link in it: the filter is not in
        // the optimized plan, the scan it filters is (the node alone: setLogicalLink would pass the link on
        // to the creation side's exchange)
        target.logicalLink.foreach(f.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, _))
        f
    }
  }

  /** Which sides of `j` may be filtered (true = left), the preferred one first. */
  private def applicationSides(j: EquiJoin): Seq[Boolean] = {
    // a broadcast join's build side is the creation side; of a shuffled inner join's, the larger is tried
    // first (a shuffled side without an exchange of its own may read the shuffle below it: `applications`)
    val order = if (sizeOf(j.left) >= sizeOf(j.right)) Seq(true, false) else Seq(false, true)
    order.filter(appIsLeft => dropsRowsOf(j.joinType, appIsLeft) &&
      (!j.broadcast || (if (appIsLeft) j.rightExchange else j.leftExchange).isDefined))
  }

  /** Whether a join of `joinType` drops rows of its left side (`appIsLeft`) or right side by the other's keys. */
  private def dropsRowsOf(joinType: JoinType, appIsLeft: Boolean): Boolean = joinType match {
    case Inner => true
    case LeftSemi => true
    // a right row only says whether left rows with its key have a match: one whose key no left row has
    // changes nothing (never null-aware: EquiJoin leaves NOT IN's anti join out)
    case LeftAnti | ExistenceJoin(_) => !appIsLeft
    case RightOuter => appIsLeft
    case LeftOuter => !appIsLeft
    case _ => false
  }

  /** Whether a broadcast exchange in `app` is the creation side of a filter placed there already: a
   * filter below it pays by making that filter's keys fewer. Only for a broadcast join's keys, so a
   * broadcast never waits for a shuffle; never a broadcast of a table Spark's dynamic partition pruning
   * builds its keys from (`dppTables`): DPP reuses a join's broadcast only while that join's build side
   * is the plan DPP planned (AQE's PlanAdaptiveDynamicPruningFilters), else it is dropped. */
  private def feeds(app: SparkPlan, j: EquiJoin, dppTables: Set[String]): SparkPlan => Boolean =
    if (!j.broadcast) _ => false
    else {
      val read = app.collect { case f: DynamicFilterExec => f.creations }.flatten.map(CreationRewire.unfiltered).toSet
      e => read.contains(CreationRewire.unfiltered(e)) && !tablesOf(e).exists(dppTables.contains)
    }
}
