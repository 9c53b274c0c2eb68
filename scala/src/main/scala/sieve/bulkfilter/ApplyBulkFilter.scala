package sieve.bulkfilter

import scala.collection.mutable

import org.apache.spark.sql.{Column, DataFrame, SieveDatasets, SparkShims}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.functions.{col, concat, lit, raise_error, regexp_replace, url_decode, when}
import org.apache.spark.sql.types.{ArrayType, MapType, StringType, StructType}

import sieve.errors.{SieveColumnException, SieveException, SieveSourceException, SieveTreeException}
import sieve.ordering._

/**
 * `tree.apply(df)`: checks the tree against `df` (every column exists, every source can be read and
 * has its value column), plans how the values are read, and returns `df` under one [[BulkFilter]]
 * node. Every mistake is raised here, naming what is wrong.
 *
 * Reading: all text files of one key column are read by ONE scan, each row tagged with its file, so
 * a thousand one-file leaves cost one scan, not a thousand; other sources (csv, json, parquet, orc,
 * DataFrames, whose schemas may differ file to file) are read once per distinct source.
 */
object ApplyBulkFilter {
  val FileColumn = "file"

  def apply(df: DataFrame, tree: FilterTree[LeafSpec]): DataFrame = {
    checkNodes(tree, "root")
    val spark = df.sparkSession
    val leaves = tree.leaves
    val keys = leaves.map(l => resolveKey(df, l.column))

    // Where each leaf's values come from: a read (shared by leaves) and the files of it the leaf owns.
    val resolved = mutable.HashMap.empty[PathSource, ValueSources.Resolved]
    def resolve(p: PathSource) = resolved.getOrElseUpdate(p, ValueSources.resolve(spark, p.path, p.format))
    val leafBytes = leaves.map(_.source match {
      case p: PathSource => resolve(p).statuses.map(_.getLen).sum
      case f: FrameSource => f.frame.queryExecution.optimizedPlan.stats.sizeInBytes.min(Long.MaxValue).toLong
    })
    val leafReads: Seq[(Read, Seq[String])] = leaves.zip(keys).map {
      case (leaf, key) => leaf.source match {
        case p: PathSource if resolve(p).format == "text" =>
          if (leaf.valueColumn.exists(_ != "value")) {
            throw new SieveColumnException(leaf.valueColumn.get,
              s"not a column of ${p.path} (a text file has one column, value)")
          }
          (TextRead(key), resolve(p).files)
        case other => (SourceRead(other, leaf, key), Nil)
      }
    }
    val reads = leafReads.map(_._1).distinct
    val textFiles = reads.collect { case r @ TextRead(key) =>
      val seen = scala.collection.mutable.HashSet[Any]() // each file once, in the order listed
      r -> leaves.zip(leafReads).collect {
        case (LeafSpec(_, _, p: PathSource, _), (TextRead(k), _)) if k == key => resolve(p).statuses
      }.flatten.filter(f => seen.add(f.getPath))
    }.toMap
    // A text read of a single file needs no per-row file tag: all its rows belong to all its leaves.
    val leafFiles = leafReads.map {
      case (r: TextRead, _) if textFiles(r).size == 1 => Nil
      case (_, files) => files
    }
    val (sources, comparisons) = reads.map {
      case r @ TextRead(key) =>
        val files = textFiles(r)
        val label = if (files.size == 1) Some(files.head.getPath.toUri.getPath) else None
        castValues(ValueSources.readText(spark, files), "value", label, key, label.getOrElse("text files"))
      case SourceRead(source, leaf, key) =>
        val raw = source match {
          case p: PathSource => ValueSources.read(spark, resolve(p).format, Seq(p.path))
          case f: FrameSource => f.frame
        }
        castValues(raw, valueColumnOf(raw, leaf), Some(source.describe), key, source.describe)
    }.unzip

    var next = -1
    val indexed = tree.map { _ => next += 1; next }
    val sourceFiles = reads.map {
      case r: TextRead => textFiles(r).map(f => f.getPath.toUri.toString -> f.getLen)
      case _ => Nil
    }
    val readIndex = reads.zipWithIndex.toMap
    // per-leaf fields indexed (Vectors: the rules look leaves up by index, thousands of times)
    val node = BulkFilter(indexed, keys.toVector, leafReads.map(r => readIndex(r._1)).toVector, leafFiles.toVector,
      sourceFiles.toVector, leafBytes.toVector, leaves.map(_.include).toVector, leaves.map(_.describe).toVector,
      comparisons.toVector, df.queryExecution.analyzed, sources.map(_.queryExecution.analyzed).toVector)
    SieveDatasets.ofRows(spark, node)
  }

  /** One scan: all text files of a key column, or one other source read for one (value column, type). */
  private sealed trait Read
  private final case class TextRead(key: Attribute) extends Read
  private final case class SourceRead(source: SourceSpec, leaf: LeafSpec, key: Attribute) extends Read {
    // leaves sharing a source, value column and key type share the read
    override def equals(o: Any): Boolean = o match {
      case r: SourceRead => r.source == source && r.leaf.valueColumn == leaf.valueColumn && r.key.dataType == key.dataType
      case _ => false
    }
    override def hashCode: Int = (source, leaf.valueColumn, key.dataType).hashCode
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

  private def valueColumnOf(raw: DataFrame, leaf: LeafSpec): String = {
    val name = leaf.valueColumn.getOrElse(raw.columns.headOption.getOrElse(
      throw new SieveSourceException(leaf.source.describe, "has no columns")))
    if (!raw.columns.contains(name)) {
      throw new SieveColumnException(name,
        s"not a column of ${leaf.source.describe} (its columns: ${raw.columns.mkString(", ")})")
    }
    name
  }

  /**
   * Two columns: `value`, held in the type of the leaf's [[ValueComparison.Comparison]], NULLs dropped
   * (they match nothing), and `file`, the file each value came from (for tagged text reads; empty
   * otherwise); with the comparison. Values are cast as Spark's `key = value` casts them: under ANSI a
   * string that does not cast fails the query with a message naming the file or source, the value and
   * the column; otherwise it is NULL, dropped. Values outside an integral key's range are dropped.
   */
  private def castValues(raw: DataFrame, name: String, label: Option[String], key: Attribute,
      source: String): (DataFrame, ValueComparison.Comparison) = {
    val v = raw.col(name)
    val file = if (label.isEmpty) col("_metadata.file_path") else lit("")
    val where = label.map(lit).getOrElse(url_decode(regexp_replace(file, "^file:", "")))
    val rawType = raw.schema(name).dataType
    val cmp = ValueComparison.of(raw.sparkSession, key, rawType, source)
    val compared = cmp.compared
    // Raising where a string does not cast, the cast never yields NULL: marked so, the plan gets no NULL
    // check that would evaluate it a second time. Other casts are the session's own.
    val raising = cmp.ansi && ValueComparison.isString(rawType) && rawType != compared
    val cast: Column =
      if (rawType == compared) v
      else if (raising) SieveDatasets.knownNotNull(when(v.isNotNull && SparkShims.tryCast(v, compared).isNull,
          raise_error(concat(lit(SieveException.RaisedPrefix + "value '"), v.cast(StringType), lit("' in "), where,
            lit(s" cannot be cast to ${compared.sql} for column '${key.name}'"))))
        .otherwise(SparkShims.tryCast(v, compared)))
      else v.cast(compared)
    val typed = raw.where(v.isNotNull).select(cast.as("value"), file.as(FileColumn))
    val value = typed.col("value")
    val kept = if (raising || rawType == compared) typed else typed.where(value.isNotNull)
    val held = if (cmp.held == compared) kept else {
      val (lo, hi) = ValueComparison.integralRange(cmp.held)
      kept.where(value.between(lo, hi)).select(value.cast(cmp.held).as("value"), kept.col(FileColumn))
    }
    (held, cmp)
  }
}
