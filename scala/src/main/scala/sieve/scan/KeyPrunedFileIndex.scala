package sieve.scan

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.schema.LogicalTypeAnnotation.{DateLogicalTypeAnnotation, IntLogicalTypeAnnotation}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.{INT32, INT64}

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, FileStatusWithMetadata, PartitionDirectory}
import org.apache.spark.sql.types.{ByteType, DateType, IntegerType, LongType, ShortType}

import sieve.keyset._
import sieve.plan.CachedReads

/**
 * The file listing of a Parquet scan, less the files whose footer statistics show that no row group
 * can hold a key of `ranges` (the same ranges the scan's reader gets as a pushed filter). The footers
 * are read on the driver, in parallel, when the scan lists its files: after the keys are known and
 * before any task is planned, so a skipped file costs neither a task nor an open. Counts what it sees
 * into `counts`: files skipped, row groups the reader will skip by their statistics (in the files
 * kept as well), and their rows.
 *
 * Safe by construction: a file whose footer cannot be read, that has no usable statistics for the key
 * column, or whose key column is not a plain signed integer or date is kept.
 */
class KeyPrunedFileIndex(
    delegate: FileIndex,
    column: String,
    caseSensitive: Boolean,
    ranges: KeyRanges,
    maxFiles: Long,
    @transient hadoopConf: Configuration,
    counts: KeyPrunedFileIndex.Counts) extends DerivedFileIndex(delegate) {

  override def toString: String = s"$delegate, pruned by dynamic-filter key ranges of $column"

  protected def list(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    prune(delegate.listFiles(partitionFilters, dataFilters))

  private def prune(listed: Seq[PartitionDirectory]): Seq[PartitionDirectory] = {
    val files = listed.flatMap(_.files.map(_.fileStatus))
    if (files.isEmpty || files.size > maxFiles) {
      if (files.size > maxFiles) counts.footersNotRead = files.size
      counts.report()
      return listed
    }
    val start = System.nanoTime()
    val stats = KeyPrunedFileIndex.readAll(files, column, caseSensitive, hadoopConf)
    def keep(f: FileStatusWithMetadata): Boolean = stats.get(f.getPath.toString) match {
      case Some(groups) =>
        val skipped = groups.filterNot(g => g.mayHold(ranges))
        counts.rowGroupsSkipped += skipped.length
        counts.rowsSkipped += skipped.map(_.rows).sum
        val kept = groups.isEmpty || skipped.length < groups.length
        if (!kept) counts.filesSkipped += 1
        kept
      case None => true
    }
    val out = listed.map(dir => dir.copy(files = dir.files.filter(keep)))
    counts.footersRead = files.size
    counts.timeNs += System.nanoTime() - start
    counts.listNs += System.nanoTime() - start
    counts.report()
    out
  }
}

object KeyPrunedFileIndex {
  /** What the pruning saw; `report` publishes it (to the operator's SQL metrics). */
  final class Counts(publish: Counts => Unit) {
    def report(): Unit = publish(this)
    @volatile var filesSkipped = 0L
    @volatile var rowGroupsSkipped = 0L
    @volatile var rowsSkipped = 0L
    @volatile var timeNs = 0L
    @volatile var listNs = 0L // of timeNs, the part spent as the scan lists its files (after the filter's prepare)
    @volatile var footersRead = 0L
    @volatile var footersNotRead = 0L  // files listed when more than the limit: not pruned
    @volatile var footersSampled = 0L  // of those, the files whose footers were read for an estimate
    @volatile var tableStatsFiles = 0L // files the table format's own statistics decided on (no footer read)
    @volatile var statsSource = "" // where those came from: "the Delta log", "Iceberg's manifests"
    @volatile var runtimeFilteredPartitions = 0L // a V2 scan's input partitions its own runtime filtering was given
    @volatile var partitionsSkipped = 0L // of those, the ones it dropped
    @volatile var pruningDeclined = "" // why no file or partition was left out (a binding not proven), or ""
  }

  /** How many footers of a listing longer than `maxFooterFiles` are read to estimate from. */
  val SampleFiles = 32

  /** The files whose footers stand for `files`': all of them up to `maxFiles`, else `SampleFiles` of them
   * (at most `maxFiles`) spread evenly over the listing (partition by partition: every part of the table). */
  def footerSample(files: Seq[FileStatus], maxFiles: Long): Seq[FileStatus] =
    if (files.size <= maxFiles) files
    else {
      // (indexed: a listing is often a List, whose size and apply walk it, 32 times per sample)
      val all = files.toIndexedSeq
      val n = math.min(SampleFiles.toLong, maxFiles).toInt
      (0 until n).map(i => all((i.toLong * all.size / n).toInt))
    }

  /** Rows a reader must skip, on average over a sample of the files of a scan whose listing is kept whole, for
   * ranges pushed into every reader to pay: a pushed filter costs each reader ~0.1-0.15 ms, about what reading
   * 5,000-9,000 rows of two columns costs (the star join's 20,000 files of one 400-row row group each, 0.1% kept:
   * 32 ranges pushed skipped 18% of the rows and made the query 0.85x vanilla, 22.2 s against 19.0 s). Set below
   * that estimate: near it, pushing or not costs about the same, and wider columns make a skipped row dearer. */
  val MinSkippedRowsPerReader = 4096L

  /** Whether `ranges` rule out row groups of `files` that a reader given them as a pushed filter would skip:
   * with `filesPruned` (the files none of whose row groups can hold a key are not listed), only row groups
   * beside others that can; else (`files` a sample of the listing, every file opened), at least
   * [[MinSkippedRowsPerReader]] rows a file. None: a footer does not say. */
  def skipsInside(files: Seq[FileStatus], column: String, caseSensitive: Boolean, conf: => Configuration,
      ranges: KeyRanges, filesPruned: Boolean, counts: Counts): Option[Boolean] = {
    val start = System.nanoTime()
    val stats = readAll(files, column, caseSensitive, conf)
    counts.timeNs += System.nanoTime() - start
    if (stats.size < files.size) None
    else if (!filesPruned) {
      val skipped = stats.values.map(_.filterNot(_.mayHold(ranges)).map(_.rows).sum).sum
      Some(skipped >= MinSkippedRowsPerReader * stats.size)
    } else Some(stats.values.exists { groups =>
      val holding = groups.count(_.mayHold(ranges))
      holding > 0 && holding < groups.length
    })
  }

  /** One row group's statistics on the key column (as longs); `hasValues` false = all NULL. */
  final case class RowGroup(min: Long, max: Long, hasValues: Boolean, rows: Long) {
    def mayHold(ranges: KeyRanges): Boolean = hasValues && ranges.overlaps(min, max)
  }

  /** Key types whose values Spark reads as the column's signed integer (or date) statistics. */
  def supports(t: org.apache.spark.sql.types.DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType => true
    case _ => false
  }

  private val GregorianSwitchDay = -141427L // 1582-10-15 in days since 1970-01-01
  // footers are immutable for a given (path, length, modification time): the key column's stats are kept
  private val footers = new CachedReads[(String, Long, Long, String), Option[Array[RowGroup]]](
    "spark-sieve-footers", threads = 8, size = 4096)

  /** The key column's row-group statistics of each file (by path) whose footer gives them. */
  def readAll(files: Seq[FileStatus], column: String, caseSensitive: Boolean,
      conf: => Configuration): Map[String, Array[RowGroup]] = {
    // made only to read a footer not kept (a Hadoop configuration is a copy of the session's, ~0.1 ms)
    lazy val hadoopConf = conf
    val groups = footers.all(files)(f => (f.getPath.toString, f.getLen, f.getModificationTime, column)) { f =>
      val c = hadoopConf
      () => read(f, column, caseSensitive, c)
    }
    files.zip(groups).flatMap { case (f, g) => g.map(f.getPath.toString -> _) }.toMap
  }

  private def read(file: FileStatus, column: String, caseSensitive: Boolean,
      conf: Configuration): Option[Array[RowGroup]] = try {
    val reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf))
    val footer = try reader.getFooter finally reader.close()
    val groups = footer.getBlocks.asScala.toArray.map { block =>
      val chunks = block.getColumns.asScala.filter { c =>
        val path = c.getPath.toArray
        path.length == 1 && (if (caseSensitive) path(0) == column else path(0).equalsIgnoreCase(column))
      }
      chunks.toList match {
        case c :: Nil if integral(c.getPrimitiveType) && !c.getStatistics.isEmpty =>
          val s: org.apache.parquet.column.statistics.Statistics[_] = c.getStatistics
          if (!s.hasNonNullValue) Some(RowGroup(0, 0, hasValues = false, block.getRowCount))
          else {
            val (min, max) = (asLong(s.genericGetMin), asLong(s.genericGetMax))
            // dates before the Gregorian switch may be rebased when read: their stats are not trusted
            val rebased = c.getPrimitiveType.getLogicalTypeAnnotation.isInstanceOf[DateLogicalTypeAnnotation] &&
              min < GregorianSwitchDay
            if (rebased) None else Some(RowGroup(min, max, hasValues = true, block.getRowCount))
          }
        case _ => None
      }
    }
    if (groups.forall(_.isDefined)) Some(groups.map(_.get)) else None
  } catch {
    case _: Exception => None // unreadable here: the scan reads it and reports what is wrong
  }

  private def asLong(v: Any): Long = v match {
    case i: java.lang.Integer => i.longValue
    case l: java.lang.Long => l.longValue
    case other => throw new IllegalStateException(s"not an integral statistic: $other")
  }

  /** Stats comparable as signed longs, the way Spark reads the column into an integral or date key. */
  private def integral(t: org.apache.parquet.schema.PrimitiveType): Boolean =
    (t.getPrimitiveTypeName == INT32 || t.getPrimitiveTypeName == INT64) && (t.getLogicalTypeAnnotation match {
      case null => true
      case i: IntLogicalTypeAnnotation => i.isSigned
      case _: DateLogicalTypeAnnotation => true
      case _ => false
    })
}
