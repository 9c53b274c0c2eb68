package sieve.connect

import java.util.Optional

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.connect.plugin.RelationPlugin

/**
 * spark-sieve's Spark Connect relations (SieveConnect), registered with
 * `spark.connect.extensions.relation.classes=sieve.connect.SieveRelationPlugin`. Spark 4's plugin API: the
 * relation as the bytes of a protobuf `Any`, the answer a java.util.Optional.
 */
class SieveRelationPlugin extends RelationPlugin {
  override def transform(relation: Array[Byte], planner: SparkConnectPlanner): Optional[LogicalPlan] =
    SieveConnect.transform(relation, planner).fold(Optional.empty[LogicalPlan]())(Optional.of(_))
}
