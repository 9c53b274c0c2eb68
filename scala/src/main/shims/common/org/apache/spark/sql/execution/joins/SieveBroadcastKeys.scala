package org.apache.spark.sql.execution.joins

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.apache.spark.sql.execution.SparkPlan

/** The distinct keys of a broadcast hash join's build side, read from the relation already broadcast
 * (HashedRelation is internal to Spark; this is the one place spark-sieve touches it). */
object SieveBroadcastKeys {
  /**
   * The keys of the relation `broadcast` holds, as rows of `buildKeys`' values (in that order):
   * packed keys of a LongHashedRelation are unpacked as SubqueryBroadcastExec does it.
   * None when the relation has no keys to read (null-aware anti joins' special relations).
   */
  def apply(broadcast: SparkPlan, buildKeys: Seq[Expression]): Option[Iterator[InternalRow]] =
    broadcast.executeBroadcast[HashedRelation]().value match {
      case EmptyHashedRelation => Some(Iterator.empty)
      case HashedRelationWithAllNullKeys => None
      case relation =>
        val exprs = if (relation.isInstanceOf[LongHashedRelation]) {
          buildKeys.indices.map(HashJoin.extractKeyExprAt(buildKeys, _))
        } else {
          buildKeys.zipWithIndex.map { case (k, i) => BoundReference(i, k.dataType, k.nullable) }
        }
        val project = UnsafeProjection.create(exprs)
        Some(relation.keys().map(project))
    }
}
