package sieve.dynamicfilter

import org.apache.spark.sql.SparkShims
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.{Cross, ExistenceJoin, Inner, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, ProjectExec, SortExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.window.{WindowExec, WindowGroupLimitExec}
import org.apache.spark.sql.internal.SQLConf

import sieve.Preconditions
import sieve.config.SieveConf

/**
 * Where a join's application side can be filtered by the join's keys: down from the join, through every
 * operator whose output rows carry the key's value from one input row, to the file scans and cached
 * tables that produce them. A row dropped there is one the join would drop: its key (or, when the path
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
 *    join's side; through an inner or semi join's key equality, the other side as well;
 *  - a broadcast build side only when another filter reads its keys (`feeds`: a filter there makes
 *    that one's keys fewer — nation's keys prune supplier, whose keys then prune lineitem); the targets
 *    below it are put with [[Route.feeding]] set, those below a shuffle exchange with [[Route.shuffled]];
 *  - an aggregate's grouping keys (whole groups are dropped) and a window's partition keys;
 *  - every branch of a UNION ALL, by column position.
 * At the scan the key must be deterministic and raise no error: it is computed on rows that the
 * operators above it (ANSI casts, divisions) never saw.
 */
object KeyLineage {

  /** What lies between a join and a target it reached. `feeding`: a broadcast build side whose keys another
   * filter reads; `shuffled`: a shuffle exchange that the target's rows reach as they are — no join or
   * aggregate between (each row is written, read and sorted before the join drops it); `apart`: anything
   * but projections, filters, unions and the probe side of other hash joins (without it, the join probes
   * each of the target's rows as it is read, in their stage, at most after other joins' probes). */
  final case class Route(feeding: Boolean = false, shuffled: Boolean = false, apart: Boolean = false)

  /** `plan` with `put(target, keys, route)` at every scan that `keys` (over `plan`'s output) reach, or
   * None where no target was reached or `put` declined at each. A target is a file scan or cached table,
   * with the filters over it (the dynamic filter goes above those), or a [[DynamicFilterExec]] there
   * already. */
  def place(plan: SparkPlan, keys: Seq[Expression], shared: SparkPlan => Boolean, feeds: SparkPlan => Boolean)(
      put: (SparkPlan, Seq[Expression], Route) => Option[SparkPlan]): Option[SparkPlan] = {

    def down(p: SparkPlan, ks: Seq[Expression], route: Route): Option[SparkPlan] = {
      def into(i: Int, childKeys: Seq[Expression], route: Route = route): Option[SparkPlan] =
        if (!childKeys.flatMap(_.references).forall(p.children(i).outputSet.contains)) None
        else down(p.children(i), childKeys, route).map(c => p.withNewChildren(p.children.updated(i, c)))
      p match {
        case _: DynamicFilterExec | _: FileSourceScanExec | _: InMemoryTableScanExec => at(p, ks, route)
        case f: FilterExec if overScan(f) => at(f, ks, route)
        case pr: ProjectExec if pr.projectList.forall(_.deterministic) => into(0, followAliases(ks, pr.projectList))
        case f: FilterExec if f.condition.deterministic => into(0, ks)
        case _: SortExec | _: AQEShuffleReadExec => into(0, ks, route.copy(apart = true))
        case e: ShuffleExchangeLike if !shared(e) => into(0, ks, route.copy(shuffled = true, apart = true))
        case e: BroadcastExchangeLike if !shared(e) && feeds(e) => into(0, ks, route.copy(feeding = true))
        case EquiJoin(j) if j.condition.forall(_.deterministic) =>
          throughJoin(j, ks, (side, c, k) =>
            down(c, k, route.copy(shuffled = false, apart = route.apart || !j.streamed.contains(side))))
        case a: BaseAggregateExec if a.groupingExpressions.nonEmpty && a.expressions.forall(_.deterministic) =>
          val grouping = AttributeSet(a.groupingExpressions.map(_.toAttribute))
          val overGrouping = followAliases(ks, a.resultExpressions)
          if (!overGrouping.flatMap(_.references).forall(grouping.contains)) None
          else into(0, followAliases(overGrouping, a.groupingExpressions), route.copy(shuffled = false, apart = true))
        case w: WindowExec if partitionedBy(w.partitionSpec, ks) && w.windowExpression.forall(_.deterministic) =>
          into(0, ks, route.copy(apart = true))
        case w: WindowGroupLimitExec if partitionedBy(w.partitionSpec, ks) => into(0, ks, route.copy(apart = true))
        case u: UnionExec =>
          val placed = u.children.map { c =>
            val byPosition = u.output.map(_.exprId).zip(c.output).toMap
            down(c, ks.map(_.transform { case a: Attribute if byPosition.contains(a.exprId) => byPosition(a.exprId) }),
              route)
          }
          if (placed.forall(_.isEmpty)) None
          else Some(u.withNewChildren(placed.zip(u.children).map { case (n, c) => n.getOrElse(c) }))
        case _ => None
      }
    }

    def at(target: SparkPlan, ks: Seq[Expression], route: Route): Option[SparkPlan] =
      if (ks.forall(k => k.deterministic && Preconditions.cannotRaise(k)) &&
          ks.flatMap(_.references).forall(target.outputSet.contains)) put(target, ks, route)
      else None

    down(plan, keys, Route())
  }

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
        case pr: ProjectExec if pr.projectList.forall(_.deterministic) => down(pr.child, followAliases(ks, pr.projectList))
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

  /** Below a join: into each side the keys may enter (see the object's doc), updating that child. */
  private def throughJoin(j: EquiJoin, ks: Seq[Expression],
      down: (Int, SparkPlan, Seq[Expression]) => Option[SparkPlan]): Option[SparkPlan] = {
    val refs = ks.flatMap(_.references)
    val onLeft = refs.forall(j.left.outputSet.contains)
    val onRight = refs.forall(j.right.outputSet.contains)
    // a preserved row's output rows all carry its key: dropping it drops only rows the join above drops
    // (no other row's match changes, unlike a full outer join's)
    val preserved = SieveConf.DYNAMIC_FILTER_THROUGH_PRESERVED_SIDE.get(SQLConf.get)
    val (enterLeft, enterRight, transfer) = j.joinType match {
      case Inner | Cross => (true, true, true)
      case LeftSemi => (true, false, true)
      case LeftAnti | ExistenceJoin(_) => (true, false, false)
      case LeftOuter => (preserved, ks.forall(nullIntolerant), false)
      case RightOuter => (ks.forall(nullIntolerant), preserved, false)
      case _ => (false, false, false)
    }
    val targets: Seq[(Int, Seq[Expression])] =
      (if (onLeft && enterLeft) Seq(0 -> ks) else Nil) ++
        (if (onRight && enterRight) Seq(1 -> ks) else Nil) ++
        (if (transfer && onLeft) equalKeys(ks, j.leftKeys, j.rightKeys).map(1 -> _).toSeq else Nil) ++
        (if (transfer && onRight && j.joinType != LeftSemi) equalKeys(ks, j.rightKeys, j.leftKeys).map(0 -> _).toSeq
         else Nil)
    val placed = targets.foldLeft(Map.empty[Int, SparkPlan]) { case (done, (i, k)) =>
        down(i, done.getOrElse(i, j.join.children(i)), k).fold(done)(c => done.updated(i, c))
      }
    if (placed.isEmpty) None
    else Some(j.join.withNewChildren(j.join.children.indices.map(i => placed.getOrElse(i, j.join.children(i)))))
  }

  /** `ks` over one side's join keys `from`, rewritten to the other side's `to` (equal by the join), if each is one. */
  private def equalKeys(ks: Seq[Expression], from: Seq[Expression], to: Seq[Expression]): Option[Seq[Expression]] = {
    val mapped = ks.map(k => from.indexWhere(f => EquiJoin.plain(f).semanticEquals(EquiJoin.plain(k))))
    if (mapped.contains(-1)) None else Some(mapped.map(i => EquiJoin.plain(to(i))))
  }

  private def followAliases(ks: Seq[Expression], named: Seq[NamedExpression]): Seq[Expression] = {
    val aliases = named.collect { case a: Alias => a.exprId -> a.child }.toMap
    ks.map(_.transformUp { case a: Attribute if aliases.contains(a.exprId) => aliases(a.exprId) })
  }

  private def partitionedBy(spec: Seq[Expression], ks: Seq[Expression]): Boolean =
    spec.nonEmpty && spec.forall(_.isInstanceOf[Attribute]) &&
      ks.flatMap(_.references).forall(AttributeSet(spec.flatMap(_.references)).contains)

  /** NULL whenever a column it reads is NULL. */
  private def nullIntolerant(e: Expression): Boolean = e match {
    case _: Attribute => true
    case t: TaggingExpression => nullIntolerant(t.child)
    case other => SparkShims.nullIntolerant(other) && other.children.nonEmpty && other.children.forall(nullIntolerant)
  }

  private def overScan(p: SparkPlan): Boolean = p match {
    case _: FileSourceScanExec | _: InMemoryTableScanExec => true
    case f: FilterExec => f.condition.deterministic && overScan(f.child)
    case _ => false
  }
}
