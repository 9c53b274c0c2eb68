package sieve.connect

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.SparkEnv
import org.apache.spark.connect.proto.Relation
import org.sparkproject.connect.protobuf.{CodedInputStream, WireFormat}

import sieve.errors.SieveTreeException

/**
 * spark-sieve's Spark Connect messages (proto/spark_sieve/connect.proto), read from the bytes of a
 * `Relation.extension`. Three-field messages read with the protobuf runtime Spark Connect ships (shaded), not
 * generated Java: one schema file, no protoc in the JVM build. Field numbers are the .proto's.
 */
private[connect] object ConnectMessages {
  val BulkFilterType = "spark_sieve.BulkFilterRelation"
  val InfoType = "spark_sieve.InfoRelation"

  final case class BulkFilterRelation(input: Relation, treeJson: String, frames: Seq[Relation])
  final case class InfoRelation(kind: Int, input: Option[Relation], treeJson: Option[String])
  val Status = 0
  val Explain = 1
  val Tree = 2

  /** A `type.googleapis.com/<full name>` type URL's message name. */
  def typeName(typeUrl: String): String = typeUrl.substring(typeUrl.lastIndexOf('/') + 1)

  def bulkFilter(bytes: Array[Byte]): BulkFilterRelation = {
    var input: Option[Relation] = None
    var json: Option[String] = None
    val frames = ArrayBuffer.empty[Relation]
    fields(bytes) {
      case (1, in) => input = Some(relation(in.readByteArray()))
      case (2, in) => json = Some(in.readStringRequireUtf8())
      case (3, in) => frames += relation(in.readByteArray())
    }
    BulkFilterRelation(input.getOrElse(missing(BulkFilterType, "input")),
      json.getOrElse(missing(BulkFilterType, "tree_json")), frames.toSeq)
  }

  def info(bytes: Array[Byte]): InfoRelation = {
    var kind = Status
    var input: Option[Relation] = None
    var json: Option[String] = None
    fields(bytes) {
      case (1, in) => kind = in.readEnum()
      case (2, in) => input = Some(relation(in.readByteArray()))
      case (3, in) => json = Some(in.readStringRequireUtf8())
    }
    InfoRelation(kind, input, json)
  }

  /** Calls `read` for each known field of the message in `bytes`; skips the others (a newer client's). */
  private def fields(bytes: Array[Byte])(read: PartialFunction[(Int, CodedInputStream), Unit]): Unit = {
    val in = CodedInputStream.newInstance(bytes)
    var tag = in.readTag()
    while (tag != 0) {
      val field = WireFormat.getTagFieldNumber(tag)
      if (read.isDefinedAt((field, in))) read((field, in)) else in.skipField(tag)
      tag = in.readTag()
    }
  }

  private def missing(message: String, field: String): Nothing =
    throw new SieveTreeException(message, s"the client sent no '$field' (a spark-sieve client of another version?)")

  /** A DataFrame's relation, with Spark Connect's own nesting limit (deep plans are refused as Spark's are). */
  private def relation(bytes: Array[Byte]): Relation = {
    val in = CodedInputStream.newInstance(bytes)
    in.setRecursionLimit(SparkEnv.get.conf.getInt("spark.connect.grpc.marshallerRecursionLimit", 1024))
    Relation.parseFrom(in)
  }
}
