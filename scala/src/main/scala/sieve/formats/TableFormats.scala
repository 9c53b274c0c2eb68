package sieve.formats

import scala.util.Try

import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.execution.datasources.FileIndex

/**
 * The table formats whose own per-file statistics decide what a scan reads, known by their classes' names:
 * spark-sieve compiles and runs without them, and a session without a format on its classpath sees nothing
 * of this. A Delta table's file index skips files by its log's statistics (min, max and null count per
 * column, under the physical names of column mapping) for the data filters its scan lists files with, and
 * its deletion vectors stay its own: a predicate added there prunes files before any is opened.
 */
object TableFormats {
  private val DeltaFileIndex = "org.apache.spark.sql.delta.files.TahoeFileIndex"

  /** Whether `index` lists a Delta table's files (of the snapshot its query reads: time travel's included). */
  def isDelta(index: FileIndex): Boolean = extendsClass(index.getClass, DeltaFileIndex)

  /** The number of files a Delta table's query planned to read before it ran: the listing Delta prepared for its
   * scan's own filters (`PreparedDeltaFileIndex.preparedScan`, a data-skipping pass over its log made while the
   * query was optimized), or None where the index holds none (a release that keeps it otherwise). */
  def deltaPreparedFiles(index: FileIndex): Option[Long] =
    if (!index.getClass.getName.endsWith(".PreparedDeltaFileIndex")) None
    else Try(Reflection.call(Reflection.call(index, "preparedScan"), "files") match {
      case files: Seq[_] => files.size.toLong
    }).toOption

  /** Whether `scan` is an Iceberg table's. Asked before anything touches [[IcebergTasks]]: loading that class
   * needs Iceberg's on the classpath (a V2 scan of any other source must never load it). */
  def isIceberg(scan: Scan): Boolean = scan.getClass.getName.startsWith("org.apache.iceberg.spark.source.")

  private def extendsClass(c: Class[_], name: String): Boolean =
    Iterator.iterate[Class[_]](c)(_.getSuperclass).takeWhile(_ != null).exists(_.getName == name)
}
