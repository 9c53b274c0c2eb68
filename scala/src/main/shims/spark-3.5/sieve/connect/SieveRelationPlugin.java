package sieve.connect;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;

import scala.Option;

/**
 * spark-sieve's Spark Connect relations (SieveConnect), registered with
 * {@code spark.connect.extensions.relation.classes=sieve.connect.SieveRelationPlugin}. Spark 3.5's plugin API
 * takes the relation as a protobuf {@code Any} of the protobuf runtime shaded into Spark Connect's jar. In Java,
 * not Scala: the trait's Scala signature names the unshaded {@code com.google.protobuf.Any} (shading rewrites
 * the bytecode only), which scalac cannot implement; javac reads the bytecode's shaded name.
 */
public class SieveRelationPlugin implements RelationPlugin {
  @Override
  public Option<LogicalPlan> transform(org.sparkproject.connect.protobuf.Any relation, SparkConnectPlanner planner) {
    return SieveConnect.transform(relation.toByteArray(), planner);
  }
}
