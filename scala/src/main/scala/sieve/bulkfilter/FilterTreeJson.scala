package sieve.bulkfilter

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.DataFrame

import sieve.errors.SieveTreeException
import sieve.ordering._

/**
 * The JSON form of a tree, shared with Python's `BulkFilter.to_json`, read here only (Python's `from_json`
 * asks [[canonical]]):
 * `{"op": "and"|"or", "children": [...]}` and
 * `{"op": "include"|"exclude", "column": "c", "source": {"path": "p", "format": "csv"} | {"dataframe": 0},
 *   "value_column": "v"}` (format and value_column optional).
 */
object FilterTreeJson {
  private val mapper = new ObjectMapper()

  /** `frames(i)` is the DataFrame a `{"dataframe": i}` source names, `frameName(i)` what messages call it. */
  def parse(json: String, frames: Seq[DataFrame] = Nil,
      frameName: Int => String = i => s"DataFrame #$i"): FilterTree[LeafSpec] = {
    val root = try mapper.readTree(json) catch {
      case NonFatal(e) => throw new SieveTreeException("root", s"not valid JSON: ${e.getMessage}")
    }
    if (root == null || !root.isObject) throw new SieveTreeException("root", "expected a JSON object")
    node(root, "root", frames, frameName)
  }

  /** `json` read as [[parse]] reads it (no DataFrame sources) and written back in the form `to_json` writes:
   * ops in lower case, text fields as strings, nothing else. Raises what [[parse]] raises. */
  def canonical(json: String): String = mapper.writeValueAsString(write(parse(json)))

  private def write(tree: FilterTree[LeafSpec]): ObjectNode = tree match {
    case n: Node[LeafSpec] =>
      val o = mapper.createObjectNode().put("op", n.opName)
      val children = o.putArray("children")
      n.children.foreach(c => children.add(write(c)))
      o
    case Leaf(l) =>
      val o = mapper.createObjectNode().put("op", if (l.include) "include" else "exclude").put("column", l.column)
      val src = o.putObject("source")
      l.source match {
        case PathSource(path, format) => src.put("path", path); format.foreach(src.put("format", _))
        case other => throw new IllegalArgumentException(s"${other.describe} cannot be written to JSON")
      }
      l.valueColumn.foreach(o.put("value_column", _))
      o
  }

  private def node(j: JsonNode, at: String, frames: Seq[DataFrame], frameName: Int => String): FilterTree[LeafSpec] = text(j, "op", at).toLowerCase match {
    case op @ ("and" | "or") =>
      val kids = Option(j.get("children")).filter(_.isArray)
        .getOrElse(throw new SieveTreeException(at, s"'$op' needs a 'children' list"))
        .elements().asScala.toSeq.zipWithIndex.map { case (c, i) => node(c, s"$at.$op[$i]", frames, frameName) }
      if (kids.isEmpty) throw new SieveTreeException(at, s"empty ${op.toUpperCase}: it needs at least one child")
      if (op == "and") AllOf(kids) else AnyOf(kids)
    case op @ ("include" | "exclude") =>
      val src = Option(j.get("source")).filter(_.isObject)
        .getOrElse(throw new SieveTreeException(at, s"'$op' needs a 'source' object"))
      val source =
        if (src.has("dataframe")) {
          val i = src.get("dataframe").asInt(-1)
          if (i < 0 || i >= frames.size) {
            throw new SieveTreeException(at, s"source names ${frameName(i)} but ${frames.size} were passed")
          }
          new FrameSource(frames(i), frameName(i))
        } else PathSource(text(src, "path", s"$at.source"), optText(src, "format"))
      Leaf(LeafSpec(op == "include", text(j, "column", at), source, optText(j, "value_column")))
    case other => throw new SieveTreeException(at, s"unknown op '$other' (expected and, or, include, exclude)")
  }

  private def text(j: JsonNode, field: String, at: String): String =
    optText(j, field).getOrElse(throw new SieveTreeException(at, s"missing '$field'"))

  private def optText(j: JsonNode, field: String): Option[String] =
    Option(j.get(field)).filter(n => !n.isNull).map(_.asText())
}
