package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.optimizer.BuildLeft
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, BroadcastQueryStageExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, ShuffledHashJoinExec, SortMergeJoinExec}

/**
 * Connects each [[DynamicFilterExec]] to the join it serves, once exchanges are in the plan: the
 * join's creation-side exchange (its broadcast, or the shuffle under its sort) becomes the filter's
 * second child. Spark then computes that exchange once for both — exchange reuse, or AQE's stage
 * cache — and, under AQE, runs it before the stage that holds the filter. A filter whose join has no
 * such exchange (the application side is the one broadcast, say) is removed.
 * Runs as an AQE query-stage preparation rule and, without AQE, before columnar transitions (both
 * after EnsureRequirements); wired filters are left alone, so running twice changes nothing.
 */
object WireDynamicFilters extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!plan.exists(_.isInstanceOf[DynamicFilterExec])) plan
    else plan.transformUp {
      case j: BroadcastHashJoinExec =>
        val (appIsLeft, exchange) = if (j.buildSide == BuildLeft) (false, j.left) else (true, j.right)
        wire(j, j.joinType, j.leftKeys, j.rightKeys, Seq(appIsLeft), broadcastOf(exchange).map(_ -> true))
      case j: SortMergeJoinExec => wireShuffled(j, j.joinType, j.leftKeys, j.rightKeys)
      case j: ShuffledHashJoinExec => wireShuffled(j, j.joinType, j.leftKeys, j.rightKeys)
    }.transformUp {
      case f: DynamicFilterExec if f.creation.isEmpty => f.child
    }

  private def wireShuffled(j: SparkPlan, joinType: JoinType, leftKeys: Seq[Expression],
      rightKeys: Seq[Expression]): SparkPlan =
    Seq(true, false).foldLeft(j) { (join, appIsLeft) =>
      val other = if (appIsLeft) join.children(1) else join.children.head
      wire(join, joinType, leftKeys, rightKeys, Seq(appIsLeft), shuffleOf(other).map(_ -> false))
    }

  /** Wires an unwired filter on the application side whose keys are that side's join keys. */
  private def wire(join: SparkPlan, joinType: JoinType, leftKeys: Seq[Expression], rightKeys: Seq[Expression],
      appSides: Seq[Boolean], creation: Option[(SparkPlan, Boolean)]): SparkPlan =
    (appSides.filter(canFilter(joinType, _)), creation) match {
      case (Seq(appIsLeft), Some((exchange, broadcast))) =>
        val (appKeys, creationKeys) = if (appIsLeft) (leftKeys, rightKeys) else (rightKeys, leftKeys)
        val side = if (appIsLeft) 0 else 1
        var done = false
        val newSide = join.children(side).transformDown {
          case f: DynamicFilterExec if !done && f.creation.isEmpty && sameKeys(f.keys, appKeys) =>
            done = true
            f.copy(keys = appKeys, creation = Some(exchange), creationKeys = creationKeys, broadcast = broadcast)
        }
        if (done) join.withNewChildren(join.children.updated(side, newSide)) else join
      case _ => join
    }

  private def canFilter(joinType: JoinType, appIsLeft: Boolean): Boolean = joinType match {
    case Inner => true
    case LeftSemi | RightOuter => appIsLeft
    case LeftOuter => !appIsLeft
    case _ => false
  }

  /** The join keys the filter was made for, possibly rewritten since (e.g. float normalisation). */
  private def sameKeys(mine: Seq[Expression], join: Seq[Expression]): Boolean =
    mine.size == join.size && mine.zip(join).forall { case (a, b) =>
      a.semanticEquals(b) || (a.references.nonEmpty && a.references == b.references)
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
