package sieve.formats

import scala.jdk.CollectionConverters._
import scala.annotation.nowarn

import org.apache.iceberg.{DataFile, ManifestFile, ManifestFiles, Snapshot, Table}
import org.apache.iceberg.types.{Conversions, Types}

import sieve.plan.CachedReads

/**
 * The bounds an Iceberg table's manifests keep for one column of each data file of a snapshot: read from its data
 * manifests alone (no delete manifest, no task planned), by the column's field id, which a rename or a column
 * dropped and added again under the name never gives to another column. A manifest never changes once written, so
 * what is read of one is kept for the next query of any snapshot that lists it.
 *
 * Runs only on an Iceberg scan (its classes are then on the classpath).
 */
object IcebergFileBounds {
  // the columns read of each entry: its path and the statistics the bounds come from
  private val Columns = Seq("file_path", "lower_bounds", "upper_bounds", "value_counts", "null_value_counts").asJava

  /** The bounds of field `field` (an integral or date column) of each data file of `snapshot`, by the file's path;
   * a file whose manifest keeps none for the field (metrics off, a column added after it was written) is absent. */
  def of(table: Table, snapshot: Snapshot, field: Types.NestedField): Map[String, FileBounds] = {
    val key = (table.location, snapshot.snapshotId, field.fieldId)
    Option(bySnapshot.get(key)).getOrElse {
      val manifests = snapshot.dataManifests(table.io()).asScala.toSeq
      val all = manifestBounds.all(manifests)(m => (m.path, field.fieldId))(m => () => read(table, m, field))
      val bounds = all.iterator.flatten.toMap
      bySnapshot.put(key, bounds)
      bounds
    }
  }

  private def read(table: Table, manifest: ManifestFile, field: Types.NestedField): Array[(String, FileBounds)] = {
    val reader = ManifestFiles.read(manifest, table.io(), table.specs()).select(Columns)
    try reader.iterator().asScala.flatMap(f => bounds(f, field).map(location(f) -> _)).toArray
    finally reader.close()
  }

  private def bounds(file: DataFile, field: Types.NestedField): Option[FileBounds] =
    bounds(Stats(file.lowerBounds, file.upperBounds, file.valueCounts, file.nullValueCounts), field)

  /** A manifest entry's statistics, by field id (any map may be null: metrics off). */
  private[formats] final case class Stats(
      lower: java.util.Map[Integer, java.nio.ByteBuffer],
      upper: java.util.Map[Integer, java.nio.ByteBuffer],
      values: java.util.Map[Integer, java.lang.Long],
      nulls: java.util.Map[Integer, java.lang.Long])

  private[formats] def bounds(stats: Stats, field: Types.NestedField): Option[FileBounds] = {
    val id = Integer.valueOf(field.fieldId)
    def stat[T](m: java.util.Map[Integer, T]): Option[T] = Option(m).flatMap(x => Option(x.get(id)))
    (stat(stats.lower), stat(stats.upper)) match {
      case (Some(lo), Some(hi)) => Some(FileBounds(asLong(lo, field), asLong(hi, field), hasValues = true))
      case _ =>
        // no bounds: all NULL when every value counted is, else unknown (the file is read)
        (stat(stats.values), stat(stats.nulls)) match {
          case (Some(values), Some(nulls)) if values.longValue == nulls.longValue => Some(FileBounds.allNull())
          case _ => None
        }
    }
  }

  private def asLong(buffer: java.nio.ByteBuffer, field: Types.NestedField): Long =
    // (a long column promoted from int keeps 4-byte bounds in its older files: Conversions reads them as longs)
    Conversions.fromByteBuffer[AnyRef](field.`type`, buffer.duplicate()) match {
      case i: java.lang.Integer => i.longValue
      case l: java.lang.Long => l.longValue
      case other => throw new IllegalStateException(s"not an integral bound: $other")
    }

  // (`path`, deprecated for `location` since Iceberg 1.7, is in every 1.x release)
  @nowarn("cat=deprecation")
  def location(file: org.apache.iceberg.ContentFile[_]): String = file.path.toString

  // a manifest never changes once written: its entries' bounds are kept by its path (and the field)
  private val manifestBounds = new CachedReads[(String, Int), Array[(String, FileBounds)]](
    "spark-sieve-manifests", threads = 4, size = 1024)

  // the map of a snapshot's files, kept for the next query of it (a table of 20,000 files: 20,000 entries)
  private val bySnapshot = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[(String, Long, Int), Map[String, FileBounds]](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[(String, Long, Int), Map[String, FileBounds]]): Boolean =
        size() > 8
    })
}
