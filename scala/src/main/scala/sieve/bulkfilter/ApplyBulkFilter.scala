package sieve.bulkfilter

import scala.collection.mutable

import org.apache.spark.sql.{Column, DataFrame, SieveDatasets}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.functions.{concat, lit, raise_error, when}
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StringType, StructType}

import sieve.errors.{SieveColumnException, SieveSourceException, SieveTreeException}

/**
 * `tree.apply(df)`: checks the tree against `df` (every column exists, every source can be read and
 * has its value column), reads each distinct source once, casts its values to the key column's type,
 * and returns `df` under one [[BulkFilter]] node. Every mistake is raised here, naming what is wrong.
 */
object ApplyBulkFilter {

  def apply(df: DataFrame, tree: FilterTree[LeafSpec]): DataFrame = {
    checkNodes(tree, "root")
    val input = df.queryExecution.analyzed
    val leaves = tree.leaves
    val keys = leaves.map(l => resolveKey(df, l.column))

    val read = mutable.LinkedHashMap.empty[SourceSpec, DataFrame]
    val values = mutable.LinkedHashMap.empty[(SourceSpec, Option[String], DataType), DataFrame]
    val leafSources = leaves.zip(keys).map { case (leaf, key) =>
      val raw = read.getOrElseUpdate(leaf.source, readSource(df, leaf.source))
      val slot = (leaf.source, leaf.valueColumn, key.dataType)
      values.getOrElseUpdate(slot, castValues(raw, leaf, key))
      values.keys.toSeq.indexOf(slot)
    }

    var next = -1
    val indexed = tree.map { _ => next += 1; next }
    val node = BulkFilter(indexed, keys, leafSources, leaves.map(_.include), leaves.map(_.describe),
      input, values.values.map(_.queryExecution.analyzed).toSeq)
    SieveDatasets.ofRows(df.sparkSession, node)
  }

  private def checkNodes(tree: FilterTree[LeafSpec], at: String): Unit = tree match {
    case n: Node[LeafSpec] =>
      if (n.children.isEmpty) throw new SieveTreeException(at, s"empty ${n.opName.toUpperCase}: it needs at least one child")
      n.children.zipWithIndex.foreach { case (c, i) => checkNodes(c, s"$at.${n.opName}[$i]") }
    case _ =>
  }

  private def resolveKey(df: DataFrame, name: String): Attribute = {
    val resolver = df.sparkSession.sessionState.analyzer.resolver
    val attr = df.queryExecution.analyzed.output.filter(a => resolver(a.name, name)) match {
      case Seq(a) => a
      case Seq() => throw new SieveColumnException(name,
        s"not a column of the input (its columns: ${df.columns.mkString(", ")})")
      case _ => throw new SieveColumnException(name, "ambiguous: the input has several columns of that name")
    }
    attr.dataType match {
      case _: ArrayType | _: MapType | _: StructType =>
        throw new SieveColumnException(name, s"its type ${attr.dataType.sql} cannot be a filter key")
      case _ =>
    }
    attr
  }

  private def readSource(df: DataFrame, source: SourceSpec): DataFrame = source match {
    case PathSource(path, format) => ValueSources.read(df.sparkSession, path, format)
    case f: FrameSource => f.frame
  }

  /** One column `value` of the key's type, NULLs dropped (they match nothing). A value that does not
   * cast fails the query with a message naming the source, the value and the column. */
  private def castValues(raw: DataFrame, leaf: LeafSpec, key: Attribute): DataFrame = {
    val name = leaf.valueColumn.getOrElse(raw.columns.headOption.getOrElse(
      throw new SieveSourceException(leaf.source.describe, "has no columns")))
    if (!raw.columns.contains(name)) {
      throw new SieveColumnException(name,
        s"not a column of ${leaf.source.describe} (its columns: ${raw.columns.mkString(", ")})")
    }
    val v = raw.col(name)
    val target = key.dataType
    val cast: Column =
      if (raw.schema(name).dataType == target) v
      else when(v.isNotNull && v.try_cast(target).isNull, raise_error(concat(
          lit("spark-sieve: value '"), v.cast(StringType),
          lit(s"' in ${leaf.source.describe} cannot be cast to ${target.sql} for column '${key.name}'"))))
        .otherwise(v.try_cast(target))
    raw.select(cast.as("value")).where("value IS NOT NULL")
  }
}
