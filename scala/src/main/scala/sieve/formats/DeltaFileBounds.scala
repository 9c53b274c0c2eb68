package sieve.formats

import java.net.URI

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.analysis.Resolver
import org.apache.spark.sql.execution.datasources.FileIndex
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.StructType

/**
 * The bounds a Delta table's log keeps for columns of each data file of the snapshot a scan reads (its statistics:
 * `minValues`, `maxValues`, `nullCount`, `numRecords`, under the column's physical name where column mapping names
 * it otherwise), by the file's path as the scan lists it. Read in one job over the snapshot's files (`withStats`)
 * for the columns asked and kept per table, version and column: a version never changes, so the next query of it
 * reads nothing. Bounds stay a superset of a file's live rows under deletion vectors (Delta widens, never narrows
 * them), so a file whose bounds hold no key has no row that could match. A file without them is absent (read).
 *
 * Runs only on a Delta scan; the snapshot, its metadata and its files are read by reflection (Delta's classes are
 * not on spark-sieve's classpath): a release where they differ declines, and the scan lists as Delta does.
 */
object DeltaFileBounds {
  private val PhysicalName = "delta.columnMapping.physicalName"

  /** The bounds of `columns` (integral or date columns, by the names the scan reads) of each file of the snapshot
   * `index` lists, by column then path; Left: why none are known. */
  def of(index: FileIndex, columns: Seq[String], resolver: Resolver): Either[String, Map[String, Map[String, FileBounds]]] =
    try {
      // the snapshot the query prepared its scan of (a file index of another kind: the one it was made with)
      val snapshot = scala.util.Try(Reflection.call(Reflection.call(index, "preparedScan"), "scannedSnapshot"))
        .getOrElse(Reflection.field(index, "snapshot"))
      val root = Reflection.call(index, "path").asInstanceOf[Path]
      val version = Reflection.call(snapshot, "version").asInstanceOf[Long]
      val metadata = Reflection.call(snapshot, "metadata")
      val schema = Reflection.call(metadata, "schema").asInstanceOf[StructType]
      val partitions = Reflection.call(metadata, "partitionColumns").asInstanceOf[Seq[String]]
      val physical = columns.map { c =>
        val field = schema.find(f => resolver(f.name, c))
          .getOrElse(throw new IllegalArgumentException(s"no column $c in the table's schema"))
        if (partitions.exists(resolver(_, field.name))) throw new IllegalArgumentException(s"$c is a partition column")
        c -> (if (field.metadata.contains(PhysicalName)) field.metadata.getString(PhysicalName) else field.name)
      }.toMap
      val key = (root.toString, version)
      val missing = physical.values.toSeq.distinct.filter(p => !cache.containsKey((key, p)))
      if (missing.nonEmpty) {
        val stats = Reflection.call(snapshot, "withStats").asInstanceOf[DataFrame]
        read(stats, root, missing).foreach { case (p, bounds) => cache.put((key, p), bounds) }
      }
      Right(physical.map { case (c, p) => c -> Option(cache.get((key, p))).getOrElse(Map.empty[String, FileBounds]) })
    } catch {
      // (a Delta release whose classes differ: a missing method or class is a LinkageError, not an Exception)
      case e @ (NonFatal(_) | _: LinkageError) => Left(Reflection.failure("reading the Delta log's file statistics", e))
    }

  /** Each physical column's bounds by the file's path (as Delta's file index makes it of the file's own). */
  private def read(stats: DataFrame, root: Path, physical: Seq[String]): Map[String, Map[String, FileBounds]] = {
    def stat(kind: String, p: String) = col(s"stats.$kind.`${p.replace("`", "``")}`")
    val rows = stats.select(col("path") +: col("stats.numRecords") +:
      physical.flatMap(p => Seq(stat("minValues", p), stat("maxValues", p), stat("nullCount", p))): _*).collect()
    physical.zipWithIndex.map { case (p, i) =>
      p -> rows.iterator.flatMap(r => bounds(r, 2 + 3 * i).map(location(root, r.getString(0)) -> _)).toMap
    }.toMap
  }

  /** A file's bounds from its row: min, max and null count at `at`, its records at 1; None where unknown. */
  private[formats] def bounds(row: Row, at: Int): Option[FileBounds] = {
    def long(i: Int): Option[Long] = if (row.isNullAt(i)) None else row.get(i) match {
      case n @ (_: java.lang.Long | _: java.lang.Integer | _: java.lang.Short | _: java.lang.Byte) =>
        Some(n.asInstanceOf[java.lang.Number].longValue)
      case d: java.sql.Date => Some(d.toLocalDate.toEpochDay)
      case d: java.time.LocalDate => Some(d.toEpochDay)
      case _ => None
    }
    val records = long(1)
    (long(at), long(at + 1)) match {
      case (Some(lo), Some(hi)) => Some(FileBounds(lo, hi, hasValues = true, records.getOrElse(-1L)))
      case _ => (records, long(at + 2)) match {
        case (Some(n), Some(nulls)) if n == nulls => Some(FileBounds.allNull(n))
        case _ => None
      }
    }
  }

  /** The path Delta's file index lists a file under: relative paths (URI-encoded) under the table's root. */
  private def location(root: Path, path: String): String = {
    val p = new Path(new URI(path))
    (if (p.isAbsolute) p else new Path(root, p)).toString
  }

  // (table root, version) and physical column -> bounds by path; a few tables' worth (20,000 files: ~4 MB each)
  private val cache = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[((String, Long), String), Map[String, FileBounds]](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[((String, Long), String), Map[String, FileBounds]]): Boolean =
        size() > 32
    })
}
