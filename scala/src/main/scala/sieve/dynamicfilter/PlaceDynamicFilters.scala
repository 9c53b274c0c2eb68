package sieve.dynamicfilter

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.{Attribute, DynamicPruningExpression, Expression, IsNotNull, Literal,
  PredicateHelper}
import org.apache.spark.sql.catalyst.plans.{ExistenceJoin, Inner, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{ColumnarRule, FileSourceScanExec, FilterExec, InSubqueryExec, SparkPlan,
  SubqueryAdaptiveBroadcastExec, WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, BroadcastQueryStageExec, QueryStageExec}
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.execution.exchange.{Exchange, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.internal.SQLConf

import sieve.plan.{PlanMemo, Preconditions}
import sieve.config.SieveConf
import sieve.scan.{KeyPrunedFileIndex, KeyScanPushdown, PrunedScanBytes}

/**
 * Where dynamic filters go (the "dynamic filter metadata" of seeds/002), decided on the physical plan
 * once exchanges are in it (after EnsureRequirements; the optimized and planned plan is vanilla Spark's,
 * DPP and the runtime bloom filter included). For each equi-join that can drop rows of one side (the
 * application side) by the keys of the other (the creation side) — inner joins (the larger side first),
 * both sides of left-semi joins, the right side of anti and existence joins, the non-preserved side of
 * outer joins — the join's application keys
 * are followed down ([[KeyLineage]]: through projections, filters, other joins, aggregates, windows and
 * unions) to every file scan and cached table they reach, and each of those that pays gets a filter,
 * wired to the join's own creation-side exchange (its broadcast, or the shuffle under its sort): Spark
 * computes that exchange once for both (exchange reuse, AQE's stage cache), and under AQE runs it before
 * the stage that holds the filter. All filters on one scan share one [[DynamicFilterExec]]. Then, inside
 * exchanges the plan computes once for several joins, [[SharedExchangeFilters]] puts one filter of all
 * of those joins' keys into every copy.
 *
 * A filter is placed when it is safe ([[Preconditions]]: byte-comparable, deterministic keys; a creation
 * side computed once for certain) and pays off: the scan's bytes (its files' bytes, of the columns it
 * reads; three times that when its rows reach a shuffle as they are) at least `minApplicationBytes`; the
 * creation side filtered or `minSizeRatio` times smaller — but not a whole table whose footers say its keys
 * keep nearly every row (checked once every filter is placed: one placed later may filter it) — and once its
 * AQE stage has run, no larger than the scan (a completed stage: its real size); no key a partition column
 * of the scan while DPP is on (DPP's job); a filter that would only be pushed into the scan (its broadcast join probes each row in the scan's
 * stage) not where the scan's sampled footers show its key spread over every row group. A shuffled join's
 * side that has no exchange of its own (partitioned already) gives the keys of the
 * shuffle below it ([[KeyLineage.shuffleBelow]]: a superset). One join's filters sit on one side only: each side's would wait for the other's keys. A join
 * that gets none is tagged with the reason ([[PlaceDynamicFilters.NoFilter]], shown by `spark_sieve.explain`).
 * Runs as an AQE query-stage preparation rule (at each of AQE's plans: one whose scans are all in stages
 * made already is left as it is) and before columnar transitions (without AQE the only pass; under AQE
 * again as each stage is made, on its plan); a filter that is there already is not added again, so running
 * twice changes nothing. Under AQE, once the broadcast DPP reads its keys from has run, a scan is sized by
 * the partitions DPP keeps ([[PrunedScanBytes.whenBuilt]]); before, a scan DPP prunes gets no filter, and
 * if its stage would start at once it waits for that broadcast first ([[AwaitBroadcastsExec]]; not with
 * awaitPartitionPruning off). A broadcast
 * build side is entered only when another filter reads its keys (then its scan's size does not count: the filter
 * makes the other one's keys fewer), and [[CreationRewire]] keeps every filter reading the exchange its
 * join reads.
 */
object PlaceDynamicFilters extends Rule[SparkPlan] with PredicateHelper {

  /** Why a join got no dynamic filter. */
  val NoFilter: TreeNodeTag[String] = TreeNodeTag[String]("sieve.dynamicFilter.none")

  override def apply(plan: SparkPlan): SparkPlan = PlanMemo.during(place(plan))

  private def place(plan: SparkPlan): SparkPlan =
    if (!SieveConf.enabled(conf) || !SieveConf.DYNAMIC_FILTER_ENABLED.get(conf) ||
        !plan.exists(EquiJoin.unapply(_).isDefined)) plan
    else if (!plan.exists(targetable)) keepReasons(plan)
    else {
      val facts = new Facts(plan)
      def pass(p: SparkPlan) = CreationRewire(p.transformUp { case EquiJoin(j) => filterFor(j, facts) })
      // again when the first walk placed a filter: a join's creation side filtered by a join above it (placed
      // after it, bottom-up) is selective the second time (TPC-DS q93: reason's keys filter store_returns,
      // whose keys then filter store_sales); a plan the first walk left alone is not walked twice
      val result = for {
        once <- pass(plan)
        twice <- if (once eq plan) Some(once) else pass(once)
        placed <- CreationRewire(withoutWholeTableFilters(twice))
        done <- CreationRewire(SharedExchangeFilters(placed, proposals(placed, facts))(withFilter(_, _, _, false, _)))
        awaiting <- CreationRewire(awaitingDpp(done, facts))
      } yield awaiting
      result.getOrElse {
        // filters that wait for each other (which `waitsFor` should have refused): none at all, never a
        // plan that cannot run
        logWarning("spark-sieve: dynamic filters of this plan wait for each other; the plan keeps none")
        plan
      }
    }

  /** What the placement asks of the plan it starts from, each found once: the exchanges with copies, the
   * tables DPP's build plans read, and what a scan reads once DPP has run where its keys are known already. */
  private final class Facts(plan: SparkPlan) {
    val shared: SparkPlan => Boolean = sharedExchanges(plan)
    lazy val dppTables: Set[String] = dppBuildTables(plan)
    private val kept = new java.util.IdentityHashMap[FileSourceScanExec, Option[PrunedScanBytes.Kept]]()
    // (an estimate: were it to fail, the plan goes on without it and the scan's start checks again)
    def keptByDpp(scan: FileSourceScanExec): Option[PrunedScanBytes.Kept] =
      kept.computeIfAbsent(scan, s => try PrunedScanBytes.whenBuilt(s, plan) catch {
        case NonFatal(e) => logWarning(s"spark-sieve: what DPP keeps of a scan could not be read at planning: $e"); None
      })
    private val pending = new java.util.IdentityHashMap[FileSourceScanExec, Option[PrunedScanBytes.PendingDpp]]()
    // (computed once for certain: a broadcast computed again for the wait would double its cost)
    def dppPending(scan: FileSourceScanExec): Option[PrunedScanBytes.PendingDpp] = pending.computeIfAbsent(scan, s =>
      PrunedScanBytes.pendingDpp(s, plan).filter(_.broadcasts.forall(Preconditions.sharedForCertain(_, conf))))
    /** Scans whose filters wait for DPP's keys and whose stage would start at once ([[AwaitBroadcastsExec]]). */
    val awaitDpp: java.util.Set[FileSourceScanExec] =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap())
  }

  /** A file scan or cached table outside the stages AQE has made: the only nodes a filter can go on. */
  private def targetable(p: SparkPlan): Boolean = p.isInstanceOf[FileSourceScanExec] || p.isInstanceOf[InMemoryTableScanExec]

  /** A plan whose scans are all inside stages made already (AQE plans the query again after each stage,
   * ~10 times for TPC-DS q68, and a walk costs tens of ms there): no filter can be placed, so no walk; each
   * join keeps the reason its logical join was given while its scans were in the plan. */
  private def keepReasons(plan: SparkPlan): SparkPlan = {
    plan.foreach {
      case EquiJoin(j) =>
        if (filteredAlready(j)) j.join.unsetTagValue(NoFilter)
        else j.join.setTagValue(NoFilter, j.join.logicalLink.flatMap(_.getTagValue(NoFilter)).getOrElse(NoScan))
      case _ =>
    }
    plan
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
    } else if (sides.isEmpty) { why(s"${j.joinType} join: no side whose rows it drops"); Nil }
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
    // the join's own exchange, else (a shuffled join's side partitioned already) the shuffle below it
    s.creationExchange.map(e => (e, s.creationKeys, j.broadcast))
      .orElse(if (j.broadcast) None
              else KeyLineage.shuffleBelow(s.creation, s.creationKeys).map { case (e, ks) => (e, ks, false) }) match {
      case None => why("no exchange on the creation side to read keys from"); None
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

  /** Whether computing `plan` waits for `exchange`: a dynamic filter in it reads `exchange`'s keys, or reads an
   * exchange that does. A filter on `exchange`'s side fed by `plan` would then wait for itself (TPC-H q5 at
   * sf10, sort-merge joins: lineitem filtered by orders' keys in the first walk, orders by lineitem's in the
   * second, the copies nested until the plan failed to bind). */
  private[dynamicfilter] def waitsFor(plan: SparkPlan, exchange: SparkPlan): Boolean = {
    val target = CreationRewire.unfiltered(exchange)
    def find(p: SparkPlan): Boolean = p match {
      case f: DynamicFilterExec =>
        f.creations.exists(c => CreationRewire.unfiltered(c) == target || find(c)) || find(f.child)
      case s: QueryStageExec => find(s.plan)
      case r: ReusedExchangeExec => find(r.child)
      case other => other.children.exists(find)
    }
    find(plan)
  }

  /** The join with its filters placed, or tagged with why it has none. */
  private def filterFor(j: EquiJoin, facts: Facts): SparkPlan = {
    val reasons = Seq.newBuilder[String]
    var reached = false // a scan outside shared exchanges (else the reason is that they hold its scans)
    // kept on the logical join too: AQE plans a join again once stages below it have run, and KeyLineage
    // does not enter those stages — the reason given while their scans were in the plan still holds
    def decline(why: String): SparkPlan = {
      j.join.logicalLink.foreach(_.setTagValue(NoFilter, why))
      j.join.setTagValue(NoFilter, why)
      j.join
    }
    val placed = applications(j, reasons += _).iterator.map { a =>
      KeyLineage.place(a.app, a.keys, facts.shared, feeds(a.app, j, facts.dppTables)) { (target, targetKeys, picks, route) =>
        reached = true
        val source = a.source.copy(picks = picks.map(a.source.picks))
        // (a side without an exchange of its own: the exchanges between it and the target)
        if (a.app.collect { case e: Exchange if e.find(_ eq target).isDefined => e }
            .exists(waitsFor(source.creation, _))) {
          reasons += a.why(WaitsForThisSide); None
        } else {
          // (a broadcast below the creation side is not the one this join probes the target's rows with)
          val probedInStage = source.broadcast && !a.below && !route.apart && !route.feeding && !route.afterRowProbe
          declined(target, targetKeys, source, route, facts, probedInStage, await = true) match {
            case Some(why) => reasons += a.why(why); None
            case None => Some(withFilter(target, targetKeys, Seq(source), probedInStage,
              minScanBytes(target, source, route, afterDpp = true)))
          }
        }
      }.map { newApp =>
        val filtered = j.join.withNewChildren(if (a.appIsLeft) Seq(newApp, j.right) else Seq(j.left, newApp))
        filtered.unsetTagValue(NoFilter)
        filtered
      }
    }.collectFirst { case Some(p) => p }
    placed.getOrElse {
      if (filteredAlready(j)) { j.join.unsetTagValue(NoFilter); j.join }
      else {
        val why = ((if (reached) None else throughSharedOnly(j, facts)).toSeq ++ reasons.result()).distinct
        decline(if (why.nonEmpty) why.mkString("; ") else j.join.logicalLink.flatMap(_.getTagValue(NoFilter))
          .getOrElse(NoScan))
      }
    }
  }

  /** Why not, when `j`'s keys reach scans only inside exchanges that several joins read (which `filterFor`
   * does not enter; [[SharedExchangeFilters]] fills them when every copy has a join whose filter pays). */
  private def throughSharedOnly(j: EquiJoin, facts: Facts): Option[String] = {
    val found = reachedThroughShared(j, (target, keys, source, route) => pays(target, keys, source, route, facts)
      .map(why => if (belowCreation(j, source)) fromBelow(why) else why))
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

  /** Whether a filter reading one of `j`'s sides (or a broadcast below one) is there already, in a stage AQE
   * made before this run (KeyLineage does not enter a stage made already, so it finds no scan to filter now). */
  private def filteredAlready(j: EquiJoin): Boolean = {
    def find(p: SparkPlan, sides: Set[SparkPlan]): Boolean = p match {
      case f: DynamicFilterExec if f.creations.exists(c => sides.contains(CreationRewire.unfiltered(c))) => true
      case s: QueryStageExec => find(s.plan, sides)
      case r: ReusedExchangeExec => find(r.child, sides)
      case other => other.children.exists(find(_, sides))
    }
    val own = (j.leftExchange ++ j.rightExchange).map(CreationRewire.unfiltered).toSet
    // a broadcast below one side, read by a filter in the other (also of a join AQE made a broadcast join
    // once the filter had shrunk that side: TPC-DS q75's returns)
    def below(creation: SparkPlan, keys: Seq[Expression], app: SparkPlan) =
      KeyLineage.broadcastBelow(creation, keys).exists(b => find(app, Set(CreationRewire.unfiltered(b._1))))
    (own.nonEmpty && find(j.join, own)) || below(j.left, j.leftKeys, j.right) || below(j.right, j.rightKeys, j.left)
  }

  /** What a join's keys could filter inside exchanges that have copies (which `filterFor` does not enter):
   * the scans there its keys reach where a filter pays, for [[SharedExchangeFilters]]. */
  private def proposals(plan: SparkPlan, facts: Facts): Seq[SharedExchangeFilters.Proposal] =
    plan.collect { case EquiJoin(j) => j }.flatMap { j =>
      reachedThroughShared(j, (target, keys, source, route) =>
        if (declined(target, keys, source, route, facts, probedInStage = false, await = false)
            .orElse(keepsNearlyAll(target, keys, source)).isEmpty)
          Some(SharedExchangeFilters.Proposal(j.join, target, keys, source,
            minScanBytes(target, source, route, afterDpp = true), below = belowCreation(j, source)))
        else None).flatten
    }

  /** Whether `source` is a broadcast below `j`'s creation side ([[broadcastBelow]]), not the join's own. */
  private def belowCreation(j: EquiJoin, source: KeyCollector.Source): Boolean = source.broadcast && !j.broadcast

  // (a filter in the copies of a shared exchange: not probed in stage)
  private def withFilter(target: SparkPlan, keys: Seq[Expression], sources: Seq[KeyCollector.Source],
      probedInStage: Boolean, minScanBytes: Long): SparkPlan = target match {
    case f: DynamicFilterExec =>
      if (f.has(keys, sources.map(_.creation))) f else f.and(keys, sources, probedInStage, minScanBytes)
    case _ =>
      val f = DynamicFilterExec(target, keys, sources, probedInStage, minScanBytes)
      // AQE maps a stage back to the logical plan by the first logical link in it: the filter is not in
      // the optimized plan, the scan it filters is (the node alone: setLogicalLink would pass the link on
      // to the creation side's exchange)
      target.logicalLink.foreach(f.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, _))
      f
  }

  /** Which sides of `j` may be filtered (true = left), the preferred one first. */
  private def applicationSides(j: EquiJoin): Seq[Boolean] = {
    def canFilter(joinType: JoinType, appIsLeft: Boolean) = joinType match {
      case Inner => true
      case LeftSemi => true
      // a right row only says whether left rows with its key have a match: one whose key no left row has
      // changes nothing (never null-aware: EquiJoin leaves NOT IN's anti join out)
      case LeftAnti | ExistenceJoin(_) => !appIsLeft
      case RightOuter => appIsLeft
      case LeftOuter => !appIsLeft
      case _ => false
    }
    // a broadcast join's build side is the creation side; of a shuffled inner join's, the larger is tried
    // first (a shuffled side without an exchange of its own may read the shuffle below it: `applications`)
    val order = if (sizeOf(j.left) >= sizeOf(j.right)) Seq(true, false) else Seq(false, true)
    order.filter(appIsLeft => canFilter(j.joinType, appIsLeft) &&
      (!j.broadcast || (if (appIsLeft) j.rightExchange else j.leftExchange).isDefined))
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

  /** The tables read by the build plans of Spark's dynamic partition pruning filters in `plan`. */
  private def dppBuildTables(plan: SparkPlan): Set[String] =
    plan.collectWithSubqueries { case p => p.expressions.flatMap(_.collect {
      case d: DynamicPruningExpression => d.child.collect {
        case s: InSubqueryExec => s.plan match {
          case a: SubqueryAdaptiveBroadcastExec => tablesOf(a.child)
          case other => tablesOf(other)
        }
      }.flatten
    }).flatten }.flatten.toSet

  /** Names of the tables a plan reads (file scans by their root paths, anything else by its node). */
  private def tablesOf(plan: SparkPlan): Seq[String] = {
    def of(p: SparkPlan): Seq[String] = p match {
      case a: AdaptiveSparkPlanExec => of(a.inputPlan)
      case s: QueryStageExec => of(s.plan)
      case r: ReusedExchangeExec => of(r.child)
      case s: FileSourceScanExec => s.relation.location.rootPaths.map(_.toString)
      case leaf if leaf.children.isEmpty => Seq(leaf.nodeName)
      case other => other.children.flatMap(of)
    }
    of(plan)
  }

  /** What a scan row that reaches a shuffle as it is costs, in units of its scan: read, then written,
   * read back and sorted. */
  private val ShuffledRowCost = 3

  /** Why a filter on `target` from `source` is declined as it is placed (None: it is placed), asked in one order
   * wherever one is placed: whether it [[pays]], whether it would skip nothing ([[skipsNothing]]), and last
   * whether it waits for DPP's keys ([[beforeDpp]], which may make the scan's stage wait for them: only of a
   * filter every other check lets through). */
  private def declined(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      route: KeyLineage.Route, facts: Facts, probedInStage: Boolean, await: Boolean): Option[String] =
    pays(target, keys, source, route, facts).orElse(skipsNothing(target, keys, probedInStage))
      .orElse(beforeDpp(target, keys, source, route, facts, await))

  /** None when a filter on `target` from `source` pays off, else why not. Its scan's size says what it
   * saves except below a broadcast whose keys another filter reads (`route.feeding`: it makes those keys
   * fewer) and, with `beforeShuffle`, where a broadcast's keys drop rows before a shuffle (`route.shuffled`:
   * each row dropped saves its write, read and sort, far more than the scan; the broadcast is there first
   * anyway — TPC-DS q93: `reason` on store_returns' 36 MB); a shuffle's keys there count the scan three
   * times (the scan waits for that shuffle's stage, so the rows it drops must pay for the wait). */
  private def pays(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source, route: KeyLineage.Route,
      facts: Facts): Option[String] = {
    val creation = source.creation
    val scan = scanOf(target)
    val bytes = scanBytes(scan)
    val minBytes = SieveConf.DYNAMIC_FILTER_MIN_APPLICATION_BYTES.get(conf)
    val partitionColumns = scan match {
      case s: FileSourceScanExec => s.relation.partitionSchema.fieldNames.toSeq
      case _ => Nil
    }
    val onPartitionColumn = keys.flatMap(_.references).exists(a => partitionColumns.exists(conf.resolver(_, a.name)))
    val name = nameOf(scan)
    // TPC-DS q95: two long columns of web_sales, 31 MB, into the sort-merge self-join of ws_wh
    val least = minScanBytes(target, source, route)
    if (bytes < least) {
      // (before a shuffle, least is minBytes only for a scan filtered on its own: see minScanBytes)
      val counted = if (least < minBytes) s" (x$ShuffledRowCost: its rows go into a shuffle)"
        else if (route.shuffled && SieveConf.DYNAMIC_FILTER_BEFORE_SHUFFLE.get(conf))
          " (once: its own filter decides how many rows go into the shuffle)"
        else ""
      Some(s"$name reads $bytes bytes$counted < minApplicationBytes ($minBytes)")
    }
    else if (onPartitionColumn && conf.getConf(SQLConf.DYNAMIC_PARTITION_PRUNING_ENABLED))
      Some(s"$name: the key is a partition column (dynamic partition pruning's)")
    else smallAfterDpp(target, source, route, facts).orElse {
      val creationBytes = sizeOf(creation)
      // reading more keys than the scan has rows costs more than the rows it can drop (TPC-H q4's EXISTS
      // over most of lineitem: 0.58x with the filter); only a completed stage's size says so (Spark's
      // estimate of a join without CBO is far above its real size: TPC-H q5 and q17 would lose 2.5x)
      if (materialized(creation) && creationBytes > bytes)
        Some(s"the creation side ($creationBytes bytes, measured) is larger than $name ($bytes bytes)")
      else if (!hasSelectiveFilter(creation, target) &&
          BigDecimal(creationBytes) * SieveConf.DYNAMIC_FILTER_MIN_SIZE_RATIO.get(conf) > BigDecimal(bytes))
        Some(s"the creation side is unfiltered and not minSizeRatio times smaller than $name's $bytes bytes")
      else None
    }
  }

  /** Why not, on a scan DPP prunes once DPP's keys are known (AQE has computed the broadcast it reads them
   * from): when the scan reads less, once they have pruned it, than it must for the filter to pay — what
   * [[DynamicFilterExec]] asks as the scan starts, asked before the filter makes the scan's stage wait for its
   * creation side (TPC-DS q6 partitioned: store_sales waited for item's stage, then dropped item's filter for
   * its one month) — or when the filter cannot be added to AQE's plan then ([[addsShuffle]]). Before they
   * are known: [[beforeDpp]] (the whole table's size would make the stage wait for the creation side of a
   * filter DPP's month then drops: q54, 0.75x). */
  private def smallAfterDpp(target: SparkPlan, source: KeyCollector.Source, route: KeyLineage.Route, facts: Facts)
      : Option[String] = scanOf(target) match {
    case s: FileSourceScanExec =>
      val least = minScanBytes(target, source, route, afterDpp = true)
      if (least <= 0) None
      else facts.keptByDpp(s).flatMap(kept => kept.tooSmall(least, ", by the keys of its completed broadcast")
        .map(nameOf(s) + " " + _).orElse(addsShuffle(source)))
    case _ => None
  }

  /** Why not yet, on a scan DPP prunes whose keys AQE has not computed (the broadcast DPP reads them from has
   * not run): decided at AQE's plan once it has, by what DPP keeps ([[smallAfterDpp]]); asked last, of a filter
   * that pays otherwise. `await`: a scan whose stage would start at once (DPP waiting inside it) is to wait
   * for that broadcast first ([[awaitingDpp]]; not in an exchange with copies, whose filters are decided
   * then only if the stage waits for it anyway). A whole table's keys that would keep nearly every row
   * ([[keepsNearlyAll]], asked of placed filters once all are placed) decline it now instead: no wait for a
   * filter that is dropped however much DPP keeps (TPC-DS q25 partitioned: item's and store's keys on
   * store_sales, whose stage waited for DPP's broadcast, 0.78x vanilla). */
  private def beforeDpp(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source,
      route: KeyLineage.Route, facts: Facts, await: Boolean): Option[String] = scanOf(target) match {
    case s: FileSourceScanExec if minScanBytes(target, source, route, afterDpp = true) > 0 && facts.keptByDpp(s).isEmpty =>
      facts.dppPending(s).map(p => keepsNearlyAll(target, keys, source).getOrElse {
        if (!p.inItsStage && !SieveConf.DYNAMIC_FILTER_AWAIT_PARTITION_PRUNING.get(conf)) s"${nameOf(s)}: its " +
          "dynamic partition pruning's broadcast is not built and its stage does not wait for it (awaitPartitionPruning=false)"
        else {
          if (await && !p.inItsStage) facts.awaitDpp.add(s)
          s"${nameOf(s)}: decided once the broadcast its dynamic partition pruning reads is built " +
            "(its stage waits for it)"
        }
      })
    case _ => None
  }

  /** Why not, at AQE's plan once DPP's keys are known (a filter placed only now), when the filter's creation
   * side holds a shuffle that is not a stage yet: the filter would add a second copy of it to the plan, and AQE
   * adopts a new plan only if it holds no more shuffles than the one it runs (`SimpleCostEvaluator`) — the
   * filter and every other change of that plan would be lost (TPC-DS q32 partitioned). */
  private def addsShuffle(source: KeyCollector.Source): Option[String] =
    if (!source.creation.exists(_.isInstanceOf[ShuffleExchangeLike])) None
    else Some("its creation side holds a shuffle that is not an AQE stage yet once dynamic partition pruning's " +
      "keys are known (AQE would keep its plan, which has fewer shuffles)")

  /** `plan` with each scan of `facts.awaitDpp` held back by [[AwaitBroadcastsExec]] until the broadcasts its
   * DPP reads are built — those of `plan`, once every filter is placed (a build side a filter went into is the
   * exchange its join and DPP read). Not in exchanges with copies (the copies must stay equal; a filter's copy
   * of its join's exchange is made equal again by [[CreationRewire]]), not below a dynamic filter (its stage
   * waits for that filter's creation sides already, and the filter reads the scan it sits on), not for
   * broadcasts that hold dynamic filters or awaiting scans themselves (no wait that could come back to this
   * scan, no broadcast changed here after its copy is taken). */
  private def awaitingDpp(plan: SparkPlan, facts: Facts): SparkPlan = {
    def await(p: SparkPlan): SparkPlan = p match {
      case e: Exchange if facts.shared(e) => e
      case f: DynamicFilterExec => f.withNewChildren(f.child +: f.creations.map(await))
      case s: FileSourceScanExec if facts.awaitDpp.contains(s) => PrunedScanBytes.pendingDpp(s, plan) match {
        case Some(pending) if !pending.inItsStage && !pending.broadcasts.exists(_.exists {
              case _: DynamicFilterExec => true
              case other: FileSourceScanExec => facts.awaitDpp.contains(other)
              case _ => false
            }) =>
          val awaiting = AwaitBroadcastsExec(s, pending.broadcasts)
          s.logicalLink.foreach(awaiting.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, _))
          awaiting
        case _ => s
      }
      case other => other.mapChildren(await)
    }
    if (facts.awaitDpp.isEmpty) plan else await(plan)
  }

  /** `plan` without the filters whose creation side is still a whole table once every filter is placed (a
   * filter placed below it later, which its keys feed, makes it selective: `fact ⋈ d1 ⋈ d2`, d2's keys
   * filter d1) and whose keys would keep nearly every row ([[wholeTableKeepsNearlyAll]]); their joins are
   * tagged with why, unless another filter reads their keys. Bottom-up: a broadcast that loses its filter
   * here is a whole table again for the filters above that read it. */
  private def withoutWholeTableFilters(plan: SparkPlan): SparkPlan = {
    val why = scala.collection.mutable.LinkedHashMap[SparkPlan, String]()
    val trimmed = plan.transformUp { case d: DynamicFilterExec =>
      (d.filterCount - 1 to 0 by -1).foldLeft(d: SparkPlan) {
        case (f: DynamicFilterExec, i) => f.sources(i) match {
          case Seq(source) => keepsNearlyAll(f, f.filterKeys(i), source) match {
            case Some(reason) => why(CreationRewire.unfiltered(source.creation)) = reason; f.without(i)
            case None => f
          }
          case _ => f
        }
        case (other, _) => other
      }
    }
    if (why.nonEmpty) {
      val read = trimmed.collect { case f: DynamicFilterExec => f.creations }.flatten
        .map(CreationRewire.unfiltered).toSet
      trimmed.foreach {
        case EquiJoin(j) => (j.leftExchange ++ j.rightExchange).map(CreationRewire.unfiltered)
          .find(e => why.contains(e) && !read.contains(e)).foreach { e =>
            j.join.logicalLink.foreach(_.setTagValue(NoFilter, why(e)))
            j.join.setTagValue(NoFilter, why(e))
          }
        case _ =>
      }
    }
    trimmed
  }

  /** Why a filter on `target` from an unfiltered `source` would not pay: [[wholeTableKeepsNearlyAll]]. */
  private def keepsNearlyAll(target: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source): Option[String] =
    if (hasSelectiveFilter(source.creation, target)) None else wholeTableKeepsNearlyAll(scanOf(target), keys, source)

  /** Why not, when the creation side (unfiltered) is a whole table read as it is and its footers say its keys would keep
   * more than `maxPassRatio` of the scan's rows: as many keys as it has rows, over its key column's range,
   * against the scan's sampled footers ([[KeepEstimate]], as [[DynamicFilterExec]] asks of a broadcast's
   * keys once they are known). A dimension joined on its primary key for its columns is small next to its
   * fact, and holds every key the fact does (TPC-DS q68 partitioned: store_sales waited for customer's
   * 500,000-row broadcast, 0.8x vanilla, to drop the filter at run time); a small table that holds a
   * few of the keys (a list of customers to keep) keeps its filter. */
  private def wholeTableKeepsNearlyAll(scan: SparkPlan, keys: Seq[Expression], source: KeyCollector.Source)
      : Option[String] = (keys, source.read) match {
    case (Seq(appKey: Attribute), Seq(creationKey: Attribute)) =>
      val maxFiles = SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf)
      val maxPassRatio = SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.get(conf)
      for {
        (computed, key) <- exchanged(source.creation, creationKey)
        table <- KeyScanPushdown.plannedRowGroups(computed, key, maxFiles, conf, whole = true)
        held = table.filter(_.hasValues) if held.nonEmpty
        groups <- KeyScanPushdown.plannedRowGroups(scan, appKey,
          math.min(maxFiles, KeyPrunedFileIndex.SampleFiles.toLong), conf)
        (rows, lo, hi) = (held.map(_.rows).sum, held.map(_.min).min, held.map(_.max).max)
        keep <- KeepEstimate.of(rows.toDouble, lo, hi, groups) if keep > maxPassRatio
      } yield f"the creation side is a whole table whose $rows keys in [$lo, $hi] would keep ${keep * 100}%.0f%% " +
        s"of ${nameOf(scan)}'s rows (footers: the table's, the scan's sampled), more than maxPassRatio"
    case _ => None
  }

  /** What an exchange (or its stage, or a reuse of it) computes, and `key` there: a reuse has attributes of
   * its own (every copy of an exchange must get the same answer here, or the copies differ and the plan
   * computes both: TPC-DS q47's CTE, read three times, whose item broadcast is reused). */
  private def exchanged(plan: SparkPlan, key: Attribute): Option[(SparkPlan, Attribute)] = plan match {
    case s: QueryStageExec => exchanged(s.plan, key)
    case r: ReusedExchangeExec =>
      val i = r.output.indexWhere(_.exprId == key.exprId)
      if (i < 0) None else exchanged(r.child, r.child.output(i))
    case e: Exchange => Some((e.child match {
      case w: WholeStageCodegenExec => w.child
      case c => c
    }, key))
    case other => Some((other, key))
  }

  /** The bytes a scan must read for a filter over `route` from `source` to pay (see `pays`): 0 when its size
   * does not decide, a third of `minApplicationBytes` when each row it drops would also go into a shuffle —
   * each row it reads, unless a filter of the scan's own ([[filteredOnItsOwn]]) keeps an unknown share of them
   * (TPC-DS q49 partitioned: 4,813 of store_returns' 28.8M rows pass `sr_return_amt > 10000`; store_sales'
   * shuffle keys made that scan wait for their stage and 1.4 s of collection to drop 4,503 rows: 0.91x).
   * `afterDpp`: the check once DPP has run, by the bytes of the files it keeps — there a broadcast's filter
   * before a shuffle is sized too (TPC-DS q6 partitioned: item's 10,174 keys took the driver 158 ms to
   * collect for one month of store_sales, 282,158 rows, whose shuffle they would shrink by far less). */
  private def minScanBytes(target: SparkPlan, source: KeyCollector.Source, route: KeyLineage.Route,
      afterDpp: Boolean = false): Long = {
    val beforeShuffle = route.shuffled && SieveConf.DYNAMIC_FILTER_BEFORE_SHUFFLE.get(conf)
    val minBytes = SieveConf.DYNAMIC_FILTER_MIN_APPLICATION_BYTES.get(conf)
    if (route.feeding || (beforeShuffle && source.broadcast && !afterDpp)) 0L
    else if (beforeShuffle && !filteredOnItsOwn(target)) (minBytes + ShuffledRowCost - 1) / ShuffledRowCost
    else minBytes
  }

  /** Whether the rows of `target`'s scan pass a filter of its own that tests more than NULL keys. */
  private def filteredOnItsOwn(target: SparkPlan): Boolean = target match {
    case f: DynamicFilterExec => filteredOnItsOwn(f.child)
    case FilterExec(condition, _) => dropsMoreThanNulls(condition)
    case _ => false
  }

  private def dropsMoreThanNulls(condition: Expression): Boolean =
    splitConjunctivePredicates(condition).exists(!_.isInstanceOf[IsNotNull])

  /** Why not, when a filter would only be pushed into the scan (its broadcast join probes each row in the
   * scan's stage and `sameStageRowTest` is off) and the scan's sampled footers show its key's values spread
   * over every row group: pushed, its keys would skip nothing, and their collection and the pushed checks
   * only cost (TPC-DS q19 at sf10, store_sales partitioned by date: its item, customer and store keys). */
  private def skipsNothing(target: SparkPlan, keys: Seq[Expression], probedInStage: Boolean): Option[String] = {
    val scan = scanOf(target)
    keys match {
      case Seq(key: Attribute) if probedInStage && !SieveConf.DYNAMIC_FILTER_SAME_STAGE_ROW_TEST.get(conf) &&
          KeyScanPushdown.keysSpreadOverRowGroups(scan, key, SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf), conf) =>
        Some(s"${nameOf(scan)}: ${key.name}'s values are spread over every row group (sampled footers), so " +
          "its keys would skip none, and the broadcast join probes each row in this stage")
      case _ => None
    }
  }

  private def scanOf(target: SparkPlan): SparkPlan = target match {
    case f: DynamicFilterExec => scanOf(f.child)
    case f: FilterExec => scanOf(f.child)
    case scan => scan
  }

  private def nameOf(scan: SparkPlan): String = scan match {
    case s: FileSourceScanExec => s"the scan of ${s.relation.location.rootPaths.map(_.getName).mkString(", ")}"
    case _ => "the cached table"
  }

  /** The bytes a scan reads: its files' bytes (the cached table's, once cached) of the columns it reads. */
  private def scanBytes(scan: SparkPlan): BigInt = scanBytesOf(scan)

  // (a listed table's size is a sum over its files, asked for each join whose keys reach it)
  private val scanBytesOf = new PlanMemo.Memo[SparkPlan, BigInt]({
    case s: FileSourceScanExec => PrunedScanBytes.readShare(s, s.relation.sizeInBytes)
    case s: InMemoryTableScanExec => s.relation.computeStats().sizeInBytes
    case other => sizeOf(other)
  })

  /** What a plan's output is known to weigh: a completed AQE stage's real size, else the estimate of
   * the first logical plan it links to. */
  private def sizeOf(plan: SparkPlan): BigInt = plan match {
    // a broadcast stage's size is its hash relation's (a long-keyed one can be a dense array over the key
    // range): its rows, at the width of its columns
    case s: BroadcastQueryStageExec if s.isMaterialized && s.getRuntimeStatistics.rowCount.isDefined =>
      s.getRuntimeStatistics.rowCount.get * (8 + s.output.map(_.dataType.defaultSize).sum)
    case s: QueryStageExec if s.isMaterialized => s.getRuntimeStatistics.sizeInBytes
    case s: QueryStageExec => sizeOf(s.plan)
    case r: ReusedExchangeExec => sizeOf(r.child)
    case _ => plan.logicalLink.map(_.stats.sizeInBytes).getOrElse(
      if (plan.children.isEmpty) BigInt(Long.MaxValue) else plan.children.map(sizeOf).sum)
  }

  private def materialized(plan: SparkPlan): Boolean = plan match {
    case s: QueryStageExec => s.isMaterialized
    case r: ReusedExchangeExec => materialized(r.child)
    case _ => false
  }

  /** A filter in `plan` that can drop rows (not only NULL checks, which every join key gets), also inside
   * stages, a scan's partition filters (static, or Spark's dynamic partition pruning: in a fact partitioned
   * by date, TPC-DS q50's store_returns of one month) unless `target`'s scan is pruned by partition too (its
   * size here is its table's: q17 / q25 / q29 prune store_sales to the same month, and waiting for the
   * returns' keys made them 0.8x), and on the creation sides of its dynamic filters
   * (one fed by a selective side is selective) —
   * but not those that filter `target` already: their keys' selectivity is there (fact ⋈ fact2 ⋈ d1 on
   * one key: d1's filter on fact makes fact's side no more selective for fact2, which has d1's filter). */
  private def hasSelectiveFilter(plan: SparkPlan, target: SparkPlan): Boolean = {
    val there = target match {
      case f: DynamicFilterExec => f.creations.map(CreationRewire.unfiltered).toSet
      case _ => Set.empty[SparkPlan]
    }
    def selective(p: SparkPlan): Boolean = p match {
      case FilterExec(condition, child) =>
        dropsMoreThanNulls(condition) || selective(child)
      case f: DynamicFilterExec =>
        selective(f.child) || f.creations.exists(c => !there.contains(CreationRewire.unfiltered(c)) && selective(c))
      case s: QueryStageExec => selective(s.plan)
      case r: ReusedExchangeExec => selective(r.child)
      case s: FileSourceScanExec => !prunedByPartition(scanOf(target)) && prunedByPartition(s)
      case other => other.children.exists(selective)
    }
    selective(plan)
  }

  /** A file scan with a partition filter that can drop partitions (not AQE's dropped DPP, `true`). */
  private def prunedByPartition(scan: SparkPlan): Boolean = scan match {
    case s: FileSourceScanExec => s.partitionFilters.exists {
      case _: IsNotNull | DynamicPruningExpression(Literal.TrueLiteral) => false
      case _ => true
    }
    case _ => false
  }

  /** Exchanges with a canonical copy elsewhere in the plan (or in a stage made already): one scan computed
   * for both, which a filter in one copy would undo. */
  private def sharedExchanges(plan: SparkPlan): SparkPlan => Boolean = {
    // without the dynamic filters: a join inside each copy puts its filter there during this same pass
    // (TPC-DS q59: the date join inside the CTE), and the copy must still count as one with the other
    val all = plan.collectWithSubqueries {
      case s: QueryStageExec => CreationRewire.unfiltered(s.plan)
      case r: ReusedExchangeExec => CreationRewire.unfiltered(r.child)
      case e: Exchange => CreationRewire.unfiltered(e)
    }
    val counts = all.groupBy(identity).map { case (k, v) => k -> v.size }
    val withCopies = counts.filter(_._2 > 1).keySet
    e => withCopies.nonEmpty && withCopies.contains(CreationRewire.unfiltered(e))
  }
}

/** Without AQE: [[PlaceDynamicFilters]] after EnsureRequirements, before exchange reuse. */
object PlaceDynamicFiltersColumnarRule extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = PlaceDynamicFilters
}
