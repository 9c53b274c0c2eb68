package sieve.connect

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{SparkSession, SparkShims}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.types.StringType
import org.apache.spark.unsafe.types.UTF8String
import org.sparkproject.connect.protobuf.{Any => ProtoAny}

import sieve.api.PythonFacade
import sieve.bulkfilter.{ApplyBulkFilter, FilterTreeJson}
import sieve.errors.SieveTreeException

/**
 * Bulk filters, explain, status and `BulkFilter.from_json` for Spark Connect clients (`tree.apply(df)` on a Connect DataFrame): the
 * server side of python/spark_sieve/_connect.py, called by each line's `sieve.connect.SieveRelationPlugin`
 * (scala/src/main/shims: Spark 4's plugin API takes the relation's bytes, 3.5's a shaded protobuf `Any`).
 * Spark asks every plugin in turn, so a relation that is not spark-sieve's gets None. Errors are the classic
 * session's SieveExceptions, which Spark Connect hands to the client with their class names and conditions.
 */
object SieveConnect {
  import ConnectMessages._

  /** The plan of a `Relation.extension` (the bytes of a protobuf `Any`), if it is one of spark-sieve's. */
  def transform(relation: Array[Byte], planner: SparkConnectPlanner): Option[LogicalPlan] = {
    val any = ProtoAny.parseFrom(relation)
    typeName(any.getTypeUrl) match {
      case BulkFilterType => Some(bulkFilter(ConnectMessages.bulkFilter(any.getValue.toByteArray), planner))
      case InfoType => Some(info(ConnectMessages.info(any.getValue.toByteArray), planner))
      case _ => None
    }
  }

  private def session(planner: SparkConnectPlanner): SparkSession = planner.sessionHolder.session

  private def bulkFilter(m: BulkFilterRelation, planner: SparkConnectPlanner): LogicalPlan = {
    def frame(r: org.apache.spark.connect.proto.Relation) = SparkShims.ofRows(session(planner), planner.transformRelation(r))
    ApplyBulkFilter(frame(m.input), FilterTreeJson.parse(m.treeJson, m.frames.map(frame))).queryExecution.analyzed
  }

  private def info(m: InfoRelation, planner: SparkConnectPlanner): LogicalPlan = m.kind match {
    case Status =>
      rows(Seq("key", "value"), PythonFacade.status(session(planner)).asScala.toSeq.sorted.map { case (k, v) => Seq(k, v) })
    case Explain =>
      val df = SparkShims.ofRows(session(planner), planner.transformRelation(
        m.input.getOrElse(throw new SieveTreeException(InfoType, "EXPLAIN needs the DataFrame explained"))))
      rows(Seq("bulk_filters", "dynamic_filters"),
        Seq(Seq(PythonFacade.explainBulkFilters(df), PythonFacade.explainDynamicFilters(df))))
    case Tree =>
      rows(Seq("tree_json"), Seq(Seq(PythonFacade.canonicalTree(
        m.treeJson.getOrElse(throw new SieveTreeException(InfoType, "TREE needs the tree's JSON"))))))
    case other => throw new SieveTreeException(InfoType, s"unknown kind $other (a spark-sieve client of another version?)")
  }

  /** A local relation of string columns. */
  private def rows(columns: Seq[String], values: Seq[Seq[String]]): LogicalPlan =
    LocalRelation(columns.map(AttributeReference(_, StringType, nullable = false)()),
      values.map(v => InternalRow.fromSeq(v.map(UTF8String.fromString))))
}
