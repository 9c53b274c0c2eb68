package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Expression, KnownFloatingPointNormalized}
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight, NormalizeNaNAndZero}
import org.apache.spark.sql.catalyst.plans.JoinType
import org.apache.spark.sql.execution.{InputAdapter, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, BroadcastQueryStageExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.SortExec
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, ShuffledHashJoinExec, SortMergeJoinExec}
import org.apache.spark.sql.types.{ByteType, IntegerType, LongType, ShortType}

/**
 * A planned equi-join as the dynamic filters see it: its keys, its condition, and for each side the
 * exchange it reads that side through — the broadcast of a broadcast hash join's build side, the
 * shuffle of a shuffled join's side — which is where a filter on the other side reads its keys.
 */
final case class EquiJoin(join: SparkPlan, joinType: JoinType, leftKeys: Seq[Expression],
    rightKeys: Seq[Expression], condition: Option[Expression], left: SparkPlan, right: SparkPlan,
    leftExchange: Option[SparkPlan], rightExchange: Option[SparkPlan]) {
  def broadcast: Boolean = join.isInstanceOf[BroadcastHashJoinExec]

  /** The child (0 left, 1 right) a hash join streams: each of its rows is probed as it is read. */
  def streamed: Option[Int] = join match {
    case h: BroadcastHashJoinExec => Some(if (h.buildSide == BuildLeft) 1 else 0)
    case h: ShuffledHashJoinExec => Some(if (h.buildSide == BuildLeft) 1 else 0)
    case _ => None
  }

  /** A broadcast hash join's broadcast and build keys, also inside whole-stage codegen (in a stage AQE made). */
  def build: Option[(SparkPlan, Seq[Expression])] = join match {
    case h: BroadcastHashJoinExec =>
      val (side, keys) = if (h.buildSide == BuildLeft) (h.left, h.leftKeys) else (h.right, h.rightKeys)
      EquiJoin.broadcastOf(side match { case i: InputAdapter => i.child; case other => other }).map(_ -> keys)
    case _ => None
  }

  /** Whether a probe of its hash table costs more than a lookup by one long: build keys that Spark cannot pack
   * into one long (`HashJoin.rewriteKeyExpr`: integral keys of at most 8 bytes together) go into an
   * UnsafeHashedRelation, each probe a key row built, hashed and compared byte by byte. */
  def rowProbe: Boolean = {
    val keys = if (streamed.contains(0)) rightKeys else leftKeys
    keys.exists(k => !EquiJoin.Packable.contains(k.dataType)) || keys.map(_.dataType.defaultSize).sum > 8
  }
}

object EquiJoin {
  /** The key types Spark packs into one long (its `IntegralType`, private to Spark). */
  private val Packable = Set[Any](ByteType, ShortType, IntegerType, LongType)

  /** A key without the float normalisation Spark adds to join keys (NormalizeFloatingNumbers: -0.0 and
   * NaN made one value each), to compare keys of two joins. */
  def plain(key: Expression): Expression = key.transformUp {
    case KnownFloatingPointNormalized(NormalizeNaNAndZero(child)) => child
  }

  def unapply(plan: SparkPlan): Option[EquiJoin] = plan match {
    case j: BroadcastHashJoinExec if !j.isNullAwareAntiJoin =>
      val built = if (j.buildSide == BuildLeft) broadcastOf(j.left) else None
      val builtRight = if (j.buildSide == BuildRight) broadcastOf(j.right) else None
      Some(EquiJoin(j, j.joinType, j.leftKeys, j.rightKeys, j.condition, j.left, j.right, built, builtRight))
    case j: SortMergeJoinExec =>
      Some(EquiJoin(j, j.joinType, j.leftKeys, j.rightKeys, j.condition, j.left, j.right, shuffleOf(j.left),
        shuffleOf(j.right)))
    case j: ShuffledHashJoinExec =>
      Some(EquiJoin(j, j.joinType, j.leftKeys, j.rightKeys, j.condition, j.left, j.right, shuffleOf(j.left),
        shuffleOf(j.right)))
    case _ => None
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
