package sieve.dynamicfilter

import org.apache.spark.sql.SparkShims
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.{Cross, ExistenceJoin, Inner, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.execution.{FilterExec, InputAdapter, ProjectExec, SortExec, SparkPlan,
  UnionExec, WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.execution.window.{WindowExec, WindowGroupLimitExec}
import org.apache.spark.sql.internal.SQLConf

import sieve.plan.Preconditions
import sieve.config.SieveConf

/**
 * Where a join's application side can be filtered by the join's keys: down from the join, through every
 * operator whose output rows carry the key's value from one input row, to the scans (files, data source
 * V2 tables such as Iceberg's) and cached tables that produce them. A row dropped there is one the join would drop: its key (or, when the path
 * crosses another join's equality, the equal key of the other side) matches no creation-side key.
 *
 * The steps, each taken only where it keeps every answer:
 *  - Project (an alias is followed to its expression), Filter, Sort, shuffle exchanges and AQE reads —
 *    all deterministic; an exchange that has a canonical copy elsewhere in the plan (`shared`) is not
 *    crossed, so its reuse (one scan for both) is never lost ([[SharedExchangeFilters]] puts one filter,
 *    of every copy's joins, into all copies);
 *  - a join's side that the key's columns come from: either side of an inner join, the left of a
 *    semi / anti / existence join, the null-supplying side of an outer join with a key that is NULL
 *    wherever a column of it is (the rows that lose their match come back NULL-extended, and a NULL key
 *    is dropped); the preserved side of a left / right outer join (`throughPreservedSide`: each output
 *    row of a preserved row carries its key, and no other row's match changes) — never a full outer
 *    join's side; through an inner or semi join's key equality, the other side as well (each key column
 *    to the side it comes from, or is equal to);
 *  - a broadcast build side only when another filter reads its keys (`feeds`: a filter there makes
 *    that one's keys fewer — nation's keys prune supplier, whose keys then prune lineitem); the targets
 *    below it are put with [[Route.feeding]] set, those below a shuffle exchange with [[Route.shuffled]];
 *  - an aggregate's grouping keys (whole groups are dropped) and a window's partition keys;
 *  - every branch of a UNION ALL, by column position.
 * At the scan the key must be deterministic and raise no error: it is computed on rows that the
 * operators above it (ANSI casts, divisions) never saw. A key of several columns goes on with those that
 * take each step (a row whose columns there match no creation-side key's same columns matches none):
 * the others are dropped, down to none, where the walk stops.
 */
object KeyLineage {

  /** What lies between a join and a target it reached. `feeding`: a broadcast build side whose keys another
   * filter reads; `shuffled`: a shuffle exchange that the target's rows reach as they are — no join or
   * aggregate between (each row is written, read and sorted before the join drops it); `apart`: anything
   * but projections, filters, unions and the probe side of other hash joins (without it, the join probes
   * each of the target's rows as it is read, in their stage, at most after other joins' probes);
   * `afterRowProbe`: the probe side of a broadcast join whose probe builds and hashes a key row
   * ([[EquiJoin.rowProbe]]), which the target's rows reach first; `aggregated`: an aggregate that the
   * target's rows reach as they are (no join between); `exchanges`: those crossed, the nearest first;
   * `probes`: the inner and semi broadcast joins that probe each of the target's rows in its stage, as they
   * are read (only projections, filters and other broadcast joins' probe sides between); `probesShuffled`: the
   * rows those joins make go into a shuffle exchange as they are (the target's rows reach it through them). */
  final case class Route(feeding: Boolean = false, shuffled: Boolean = false, apart: Boolean = false,
      afterRowProbe: Boolean = false, aggregated: Boolean = false, exchanges: List[SparkPlan] = Nil,
      probes: List[Probe] = Nil, probesShuffled: Boolean = false) {
    /** This route past `e`, which leaves the target's stage. */
    private[KeyLineage] def across(e: SparkPlan): Route = copy(exchanges = e :: exchanges).unprobed
    /** This route below a node that is neither a projection, a filter nor a broadcast join's probe side. */
    private[KeyLineage] def unprobed: Route = copy(probes = Nil, probesShuffled = false)
    /** This route below a projection of `named`: each probe's keys over its input. */
    private[KeyLineage] def below(named: Seq[NamedExpression]): Route =
      copy(probes = probes.map(p => p.copy(probed = p.probed.map(unalias(named)))))
  }

  /** A broadcast hash join that probes a target's rows: its `broadcast` exchange with its `buildKeys`, and the
   * keys it probes with, each over the node the walk has reached (at the target: over the target's output);
   * `inner`: an inner join (a row comes out once per match), else a semi join (once if it has one). */
  final case class Probe(broadcast: SparkPlan, buildKeys: Seq[Expression], probed: Seq[Expression], inner: Boolean)

  /** A key followed down: its position among the join's keys, and its expression over the current node's output. */
  type Keys = Seq[(Int, Expression)]

  /** `plan` with `put(target, keys, picks, route)` at every scan that `keys` (over `plan`'s output) reach, or
   * None where no target was reached or `put` declined at each. `picks`: the positions among `keys` of those
   * that reach the target (a step that one key cannot take drops it — an aggregate's result that is not a
   * grouping key, a column of a join's other side: a filter on some of the join's keys keeps every row that
   * can match; TPC-H q2's `[min(ps_supplycost), ps_partkey]` reaches partsupp as `ps_partkey`). A target is a
   * scan ([[FilterPlans.targetable]]) or cached table, with the filters over it (the dynamic filter goes above those), or a
   * [[DynamicFilterExec]] there already. */
  def place(plan: SparkPlan, keys: Seq[Expression], shared: SparkPlan => Boolean, feeds: SparkPlan => Boolean)(
      put: (SparkPlan, Seq[Expression], Seq[Int], Route) => Option[SparkPlan]): Option[SparkPlan] = {

    def down(p: SparkPlan, ks: Keys, route: Route): Option[SparkPlan] = {
      def into(i: Int, childKeys: Keys, route: Route = route): Option[SparkPlan] =
        over(childKeys, p.children(i).outputSet)
          .flatMap(down(p.children(i), _, route).map(c => p.withNewChildren(p.children.updated(i, c))))
      // whole partitions are dropped: the keys over the partition columns go on
      def byPartition(spec: Seq[Expression]): Option[SparkPlan] =
        over(ks, AttributeSet(spec.flatMap(_.references))).flatMap(into(0, _, route.copy(apart = true).unprobed))
      p match {
        case _: DynamicFilterExec => at(p, ks, route)
        case scan if FilterPlans.targetable(scan) => at(p, ks, route)
        case f: FilterExec if overScan(f) => at(f, ks, route)
        case pr: ProjectExec if pr.projectList.forall(_.deterministic) =>
          into(0, followAliases(ks, pr.projectList), route.below(pr.projectList))
        case f: FilterExec if f.condition.deterministic => into(0, ks)
        case _: SortExec | _: AQEShuffleReadExec => into(0, ks, route.copy(apart = true).unprobed)
        case e: ShuffleExchangeLike if !shared(e) => into(0, ks, route.copy(shuffled = true, apart = true).across(e))
        case e: BroadcastExchangeLike if !shared(e) && feeds(e) => into(0, ks, route.copy(feeding = true).across(e))
        case EquiJoin(j) if j.condition.forall(_.deterministic) =>
          throughJoin(j, ks, (side, c, k) => down(c, k, route.copy(shuffled = false, aggregated = false,
            apart = route.apart || !j.streamed.contains(side),
            afterRowProbe = route.afterRowProbe || (j.broadcast && j.streamed.contains(side) && j.rowProbe),
            probes = probesBelow(j, side, route.probes),
            probesShuffled = (route.shuffled || route.probesShuffled) && probesBelow(j, side, Nil).nonEmpty)))
        // NOT IN's anti join (no EquiJoin: its keys filter nothing) is a filter of its left rows: the right side
        // alone decides whether each is kept, so a row the join above drops may go before it (TPC-H q16:
        // partsupp by part's keys, before its shuffle)
        case j: BroadcastHashJoinExec if j.isNullAwareAntiJoin && j.condition.forall(_.deterministic) => into(0, ks)
        case a: BaseAggregateExec if a.groupingExpressions.nonEmpty && a.expressions.forall(_.deterministic) =>
          over(followAliases(ks, a.resultExpressions), AttributeSet(a.groupingExpressions.map(_.toAttribute)))
            .flatMap(g => into(0, followAliases(g, a.groupingExpressions),
              route.copy(shuffled = false, apart = true, aggregated = true).unprobed))
        case w: WindowExec if partitioned(w.partitionSpec) && w.windowExpression.forall(_.deterministic) =>
          byPartition(w.partitionSpec)
        case w: WindowGroupLimitExec if partitioned(w.partitionSpec) => byPartition(w.partitionSpec)
        case u: UnionExec =>
          val placed = u.children.map { c =>
            val byPosition = u.output.map(_.exprId).zip(c.output).toMap
            down(c, ks.map { case (i, k) =>
              i -> k.transform { case a: Attribute if byPosition.contains(a.exprId) => byPosition(a.exprId) }
            }, route.unprobed)
          }
          if (placed.forall(_.isEmpty)) None
          else Some(u.withNewChildren(placed.zip(u.children).map { case (n, c) => n.getOrElse(c) }))
        case _ => None
      }
    }

    def at(target: SparkPlan, ks: Keys, route: Route): Option[SparkPlan] =
      over(ks.filter { case (_, k) => k.deterministic && Preconditions.cannotRaise(k) }, target.outputSet)
        .flatMap(k => put(target, k.map(_._2), k.map(_._1), route))

    down(plan, keys.zipWithIndex.map(_.swap), Route())
  }

  /** The probes of a target's rows below side `side` of `j` ([[Route.probes]]): none below a join that is not a
   * broadcast join's probe side (its rows are sorted or built into a hash table first); `j` itself when it is an
   * inner or semi join, with the keys that side probes with. */
  private def probesBelow(j: EquiJoin, side: Int, probes: List[Probe]): List[Probe] =
    if (!j.broadcast || !j.streamed.contains(side)) Nil
    else j.build.filter(_ => j.joinType == Inner || j.joinType == LeftSemi)
      .map { case (broadcast, buildKeys) =>
        Probe(broadcast, buildKeys, (if (side == 0) j.leftKeys else j.rightKeys).map(EquiJoin.plain),
          inner = j.joinType == Inner) :: probes }
      .getOrElse(probes)

  /** The keys of `ks` over `attributes`, if any. */
  private def over(ks: Keys, attributes: AttributeSet): Option[Keys] =
    Some(ks.filter(_._2.references.subsetOf(attributes))).filter(_.nonEmpty)

  /** The shuffle below a creation side that has none of its own (a shuffled join's side partitioned
   * already — the output of a semi join under another: TPC-DS q95's second IN subquery), with `keys` over its
   * output. Each step down keeps every key value of its output in its input (projections, filters, sorts,
   * a join's side the keys come from — a side NULL-extended only for keys NULL wherever a column of theirs
   * is), so the shuffle's keys are a superset of the side's: a filter reading them keeps every row the join
   * keeps. Not below an aggregate or a window: what makes such a side selective is mostly a condition on
   * its groups (HAVING, a rank: TPC-DS q70's top five states, q32's discount above its item's average),
   * and the shuffle below holds every group. The keys are computed on rows the operators above never saw:
   * they must be deterministic and raise no error. */
  def shuffleBelow(plan: SparkPlan, keys: Seq[Expression]): Option[(SparkPlan, Seq[Expression])] = {
    def down(p: SparkPlan, ks: Seq[Expression]): Option[(SparkPlan, Seq[Expression])] =
      if (!ks.flatMap(_.references).forall(p.outputSet.contains)) None
      else p match {
        case _: ShuffleExchangeLike | _: ShuffleQueryStageExec | ReusedExchangeExec(_, _: ShuffleExchangeLike) =>
          Some(p -> ks)
        case pr: ProjectExec if pr.projectList.forall(_.deterministic) => down(pr.child, ks.map(unalias(pr.projectList)))
        case f: DynamicFilterExec => down(f.child, ks)
        case _: FilterExec | _: SortExec | _: AQEShuffleReadExec => down(p.children.head, ks)
        case EquiJoin(j) =>
          val nullExtended = j.joinType match {
            case LeftOuter => Seq(false, true)
            case RightOuter => Seq(true, false)
            case Inner | Cross | LeftSemi | LeftAnti | ExistenceJoin(_) => Seq(false, false)
            case _ => Seq(true, true)
          }
          Seq(j.left, j.right).zip(nullExtended).collectFirst {
            case (side, extended) if ks.flatMap(_.references).forall(side.outputSet.contains) &&
                (!extended || ks.forall(nullIntolerant)) => side
          }.flatMap(down(_, ks))
        case _ => None
      }
    down(plan, keys).filter { case (_, ks) => ks.forall(k => k.deterministic && Preconditions.cannotRaise(k)) }
  }

  /** A broadcast below a shuffled creation side whose keys hold every value some of `keys` take there: a
   * broadcast hash join (inner, or semi) that the rows pass on their way up, on an equality of such a key —
   * each row it outputs has that key equal to a key of its build side. Its keys are a superset, known as soon
   * as the broadcast is built, and far fewer to read than the shuffle's (TPC-DS q75: `catalog_sales ⋈ item`
   * on `cs_item_sk`, books only, under the shuffle that feeds the left join to catalog_returns on
   * `(cs_order_number, cs_item_sk)`: item's broadcast drops the other categories' returns before their
   * shuffle, as Spark's runtime bloom filter does with item's scan). Each step down keeps every key value of
   * its output in its input (as in [[shuffleBelow]]; not a side NULL-extended). Returns the broadcast, its
   * join's build keys, and pairs (position in `keys`, position among those build keys); the broadcast that
   * covers most keys. The keys must be deterministic, raise no error and compare by bytes. */
  def broadcastBelow(plan: SparkPlan, keys: Seq[Expression]): Option[(SparkPlan, Seq[Expression], Seq[(Int, Int)])] = {
    // (the broadcast, its build keys, the build key position) per key
    def down(p: SparkPlan, k: Expression): Option[(SparkPlan, Seq[Expression], Int)] =
      if (!k.references.subsetOf(p.outputSet)) None
      else p match {
        case e: ShuffleExchangeLike => down(e.child, k)
        case s: ShuffleQueryStageExec => down(s.plan, k)
        case pr: ProjectExec if pr.projectList.forall(_.deterministic) => down(pr.child, unalias(pr.projectList)(k))
        case f: DynamicFilterExec => down(f.child, k)
        case _: FilterExec | _: SortExec | _: AQEShuffleReadExec | _: WholeStageCodegenExec | _: InputAdapter =>
          down(p.children.head, k)
        case EquiJoin(j) if j.joinType == Inner || j.joinType == LeftSemi =>
          val at = (j.leftKeys.zip(j.rightKeys)).indexWhere { case (l, r) =>
            (EquiJoin.plain(l).semanticEquals(EquiJoin.plain(k)) || EquiJoin.plain(r).semanticEquals(EquiJoin.plain(k))) &&
              Preconditions.binaryStable(l.dataType) && Preconditions.binaryStable(r.dataType)
          }
          j.build.filter(_ => at >= 0).map { case (b, buildKeys) => (b, buildKeys, at) }.orElse(
            Seq(j.left, j.right).find(side => k.references.subsetOf(side.outputSet)).flatMap(down(_, k)))
        case _ => None
      }
    val found = keys.zipWithIndex.flatMap { case (k, i) =>
      if (k.deterministic && Preconditions.cannotRaise(k)) down(plan, k).map(i -> _) else None
    }
    found.groupBy { case (_, (b, _, _)) => b }.values.toSeq.sortBy(-_.size).headOption.map { covered =>
      val (broadcast, buildKeys, _) = covered.head._2
      (broadcast, buildKeys, covered.map { case (i, (_, _, at)) => i -> at })
    }.filter { case (_, buildKeys, _) => buildKeys.forall(b => b.deterministic && Preconditions.binaryStable(b.dataType)) }
  }

  /** Below a join: into each side the keys that may enter it (see the object's doc), updating that child. */
  private def throughJoin(j: EquiJoin, ks: Keys, down: (Int, SparkPlan, Keys) => Option[SparkPlan]): Option[SparkPlan] = {
    // a preserved row's output rows all carry its key: dropping it drops only rows the join above drops
    // (no other row's match changes, unlike a full outer join's)
    val preserved = SieveConf.DYNAMIC_FILTER_THROUGH_PRESERVED_SIDE.get(SQLConf.get)
    // per side (left, right): entered by its own keys; NULL-extended (entered only by keys NULL with a column);
    // entered by the other side's keys equal to its own by the join
    val (no, both) = (Seq(false, false), Seq(true, true))
    val (enter, nullExtended, transfer) = j.joinType match {
      case Inner | Cross => (both, no, both)
      case LeftSemi => (Seq(true, false), no, Seq(false, true))
      case LeftAnti | ExistenceJoin(_) => (Seq(true, false), no, no)
      case LeftOuter => (Seq(preserved, true), Seq(false, true), no)
      case RightOuter => (Seq(true, preserved), Seq(true, false), no)
      case _ => (no, no, no)
    }
    val joinKeys = Seq(j.leftKeys, j.rightKeys)
    val placed = j.join.children.indices.flatMap { side =>
      val (here, other) = (j.join.children(side), j.join.children(1 - side))
      val entering = ks.flatMap { case (i, k) =>
        if (k.references.subsetOf(here.outputSet)) {
          if (enter(side) && (!nullExtended(side) || nullIntolerant(k))) Some(i -> k) else None
        }
        else if (transfer(side) && k.references.subsetOf(other.outputSet)) equalKey(k, joinKeys(1 - side), joinKeys(side)).map(i -> _)
        else None
      }
      if (entering.isEmpty) None else down(side, here, entering).map(side -> _)
    }.toMap
    if (placed.isEmpty) None
    else Some(j.join.withNewChildren(j.join.children.indices.map(i => placed.getOrElse(i, j.join.children(i)))))
  }

  /** `k`, one of one side's join keys `from`, as the other side's `to` (equal by the join). */
  private def equalKey(k: Expression, from: Seq[Expression], to: Seq[Expression]): Option[Expression] =
    Some(from.indexWhere(f => EquiJoin.plain(f).semanticEquals(EquiJoin.plain(k)))).filter(_ >= 0)
      .map(i => EquiJoin.plain(to(i)))

  private def followAliases(ks: Keys, named: Seq[NamedExpression]): Keys = {
    val follow = unalias(named)
    ks.map { case (i, k) => i -> follow(k) }
  }

  /** An expression over `named`'s output, over its input. */
  private def unalias(named: Seq[NamedExpression]): Expression => Expression = {
    val aliases = named.collect { case a: Alias => a.exprId -> a.child }.toMap
    _.transformUp { case a: Attribute if aliases.contains(a.exprId) => aliases(a.exprId) }
  }

  private def partitioned(spec: Seq[Expression]): Boolean = spec.nonEmpty && spec.forall(_.isInstanceOf[Attribute])

  /** NULL whenever a column it reads is NULL. */
  private def nullIntolerant(e: Expression): Boolean = e match {
    case _: Attribute => true
    case t: TaggingExpression => nullIntolerant(t.child)
    case other => SparkShims.nullIntolerant(other) && other.children.nonEmpty && other.children.forall(nullIntolerant)
  }

  private def overScan(p: SparkPlan): Boolean = p match {
    case scan if FilterPlans.targetable(scan) => true
    case f: FilterExec => f.condition.deterministic && overScan(f.child)
    case _ => false
  }
}
