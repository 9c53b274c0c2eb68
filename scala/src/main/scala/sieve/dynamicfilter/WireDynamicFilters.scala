package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression}
import org.apache.spark.sql.catalyst.optimizer.BuildLeft
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, FilterExec, ProjectExec, SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, BroadcastQueryStageExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, ShuffledHashJoinExec, SortMergeJoinExec}

/**
 * Connects each [[DynamicFilterExec]] to the join it was made for, once exchanges are in the plan:
 * the join's creation-side exchange (its broadcast, or the shuffle under its sort) becomes the
 * filter's second child. Spark then computes that exchange once for both — exchange reuse, or AQE's
 * stage cache — and, under AQE, runs it before the stage that holds the filter.
 *
 * A filter is paired by identity, as Spark pairs a DPP filter with its own broadcast: it must sit on
 * the join's application side with nothing in between but exchanges, sorts, projections and filters
 * (where the join's keys are still the rows' keys), and the join's key pairs must be the ones it was
 * made for ([[JoinKeys]]). It then tests the join's own key expressions (float keys normalised as the
 * join normalises them). A filter no join claims — its join was reordered or rewritten, or has no
 * exchange to read (the application side is the one broadcast) — is removed.
 * Runs as an AQE query-stage preparation rule and, without AQE, before columnar transitions (both
 * after EnsureRequirements); wired filters are left alone, so running twice changes nothing.
 */
object WireDynamicFilters extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!plan.exists(_.isInstanceOf[DynamicFilterExec])) plan
    else plan.transformUp {
      case j: BroadcastHashJoinExec =>
        val appIsLeft = j.buildSide != BuildLeft
        broadcastOf(if (appIsLeft) j.right else j.left)
          .fold[SparkPlan](j)(wire(j, j.joinType, j.leftKeys, j.rightKeys, appIsLeft, _, broadcast = true))
      case j: SortMergeJoinExec => wireShuffled(j, j.joinType, j.leftKeys, j.rightKeys)
      case j: ShuffledHashJoinExec => wireShuffled(j, j.joinType, j.leftKeys, j.rightKeys)
    }.transformUp {
      case f: DynamicFilterExec if f.creation.isEmpty => f.child
    }

  private def wireShuffled(j: SparkPlan, joinType: JoinType, leftKeys: Seq[Expression],
      rightKeys: Seq[Expression]): SparkPlan =
    Seq(true, false).foldLeft(j) { (join, appIsLeft) =>
      shuffleOf(if (appIsLeft) join.children(1) else join.children.head)
        .fold(join)(wire(join, joinType, leftKeys, rightKeys, appIsLeft, _, broadcast = false))
    }

  /** `join` with the filter made for it on its application side wired to `exchange`, if there is one. */
  private def wire(join: SparkPlan, joinType: JoinType, leftKeys: Seq[Expression], rightKeys: Seq[Expression],
      appIsLeft: Boolean, exchange: SparkPlan, broadcast: Boolean): SparkPlan = {
    val (appKeys, creationKeys) = if (appIsLeft) (leftKeys, rightKeys) else (rightKeys, leftKeys)
    def madeForThisJoin(f: DynamicFilterExec) = f.creation.isEmpty && f.madeFor.sameAs(appKeys, creationKeys) &&
      AttributeSet(appKeys.flatMap(_.references)).subsetOf(f.child.outputSet)
    val side = if (appIsLeft) 0 else 1
    if (!canFilter(joinType, appIsLeft)) join
    else onPath(join.children(side), madeForThisJoin) { f =>
      val wired = f.copy(keys = appKeys, creation = Some(exchange), creationKeys = creationKeys, broadcast = broadcast)
      // AQE maps a stage back to the logical plan by the first logical link in it: the filter is not in
      // the optimized plan (it is made at planning), its application side is
      // (the node alone: setLogicalLink would pass the link on to the creation side's exchange)
      f.child.logicalLink.foreach(wired.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, _))
      wired
    }.fold(join)(newSide => join.withNewChildren(join.children.updated(side, newSide)))
  }

  /** `plan` with `wired(f)` for the filter `f` reached from its top through transparent operators
   * only, if that filter satisfies `claims`. */
  private def onPath(plan: SparkPlan, claims: DynamicFilterExec => Boolean)(
      wired: DynamicFilterExec => SparkPlan): Option[SparkPlan] = plan match {
    case f: DynamicFilterExec => if (claims(f)) Some(wired(f)) else None
    case _: SortExec | _: ShuffleExchangeLike | _: AQEShuffleReadExec | _: ProjectExec | _: FilterExec =>
      onPath(plan.children.head, claims)(wired).map(c => plan.withNewChildren(Seq(c)))
    case _ => None
  }

  private def canFilter(joinType: JoinType, appIsLeft: Boolean): Boolean = joinType match {
    case Inner => true
    case LeftSemi | RightOuter => appIsLeft
    case LeftOuter => !appIsLeft
    case _ => false
  }

  private def broadcastOf(plan: SparkPlan): Option[SparkPlan] = plan match {
    case e: BroadcastExchangeLike => Some(e)
    case s: BroadcastQueryStageExec => Some(s)
    case r @ ReusedExchangeExec(_, _: BroadcastExchangeLike) => Some(r)
    case _ => None
  }

  private def shuffleOf(plan: SparkPlan): Option[SparkPlan] = plan match {
    case s: SortExec => shuffleOf(s.child)
    case r: AQEShuffleReadExec => shuffleOf(r.child)
    case e: ShuffleExchangeLike => Some(e)
    case s: ShuffleQueryStageExec => Some(s)
    case r @ ReusedExchangeExec(_, _: ShuffleExchangeLike) => Some(r)
    case _ => None
  }
}

/** Without AQE: [[WireDynamicFilters]] after EnsureRequirements, before exchange reuse. */
object WireDynamicFiltersColumnarRule extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = WireDynamicFilters
}
