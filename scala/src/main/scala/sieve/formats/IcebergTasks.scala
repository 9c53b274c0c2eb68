package sieve.formats

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import scala.jdk.CollectionConverters._
import scala.annotation.nowarn
import scala.util.control.NonFatal

import org.apache.iceberg.{BaseScanTaskGroup, ScanTask, ScanTaskGroup, Scan => IcebergScan}
import org.apache.iceberg.expressions.{Expression => IcebergExpression, Expressions}

import org.apache.spark.sql.connector.read.{InputPartition, Scan}
import org.apache.spark.sql.types.{DataType, LongType}

/**
 * An Iceberg scan's input partitions less the data files whose column bounds (the lower and upper bounds,
 * null and value counts its manifests keep per field id) hold no key of a set of ranges: Iceberg's own planning
 * decides, on the scan's snapshot, with the key column bound by its field id ([[IcebergBinding]]: a renamed
 * column keeps its field id; a column added since is all NULL in older files). A file left out is never opened;
 * its delete files go with it, and the files kept are read with theirs, so deletes stay Iceberg's.
 *
 * Runs only on an Iceberg scan (its classes are then on the classpath); the scan's own Iceberg scan and each
 * input partition's task group are private to Iceberg's Spark classes and read by reflection: a release where
 * they differ declines, and the scan reads every file.
 */
object IcebergTasks {
  /** The kept input partitions (a partition with some of its tasks dropped is a copy), with the data files
   * before and after. */
  final case class Pruned(partitions: Seq[InputPartition], filesBefore: Long, filesAfter: Long)

  private type AnyScan = IcebergScan[_, ScanTask, _]

  /** `partitions` of `scan` less the files none of whose rows can hold `column` within one of `ranges` (inclusive
   * bounds, as longs: days for a date; the caller has checked the column is integral or a date); Left: why the
   * files are not pruned. */
  def prune(scan: Scan, partitions: Seq[InputPartition], column: String, dataType: DataType,
      ranges: Seq[(Long, Long)]): Either[String, Pruned] =
    if (!TableFormats.isIceberg(scan)) Left("not an Iceberg scan")
    else IcebergBinding.boundName(scan, column).flatMap { name =>
      try Right {
        // the scan's own Iceberg scan (its snapshot, filters and case sensitivity), planned again with the key
        // ranges: Iceberg's planning keeps the files whose manifest bounds may hold one (the tasks the Spark scan
        // holds carry no column bounds)
        val planned = Reflection.call(scan, "scan").asInstanceOf[AnyScan]
        val files = planned.filter(anyOf(name, dataType, ranges)).asInstanceOf[AnyScan].planFiles()
        val mayHold = try files.asScala.collect { case t if t.isFileScanTask => location(t) }.toSet
          finally files.close()
        var (before, after) = (0L, 0L)
        val kept = partitions.flatMap { p =>
          val group = Reflection.field(p, "taskGroup").asInstanceOf[ScanTaskGroup[ScanTask]]
          val tasks = group.tasks.asScala.toSeq
          val keep = tasks.filter(t => !t.isFileScanTask || mayHold(location(t)))
          before += tasks.count(_.isFileScanTask)
          after += keep.count(_.isFileScanTask)
          if (keep.size == tasks.size) Some(p)
          else if (keep.isEmpty) None
          else Some(withTasks(p, new BaseScanTaskGroup[ScanTask](group.groupingKey, keep.asJava)))
        }
        Pruned(kept, before, after)
      } catch {
        // (an Iceberg release whose classes differ: a missing method or class is a LinkageError, not an Exception)
        case e @ (NonFatal(_) | _: LinkageError) => Left(Reflection.failure("Iceberg's planning of the keys", e))
      }
    }

  // (`path`, deprecated for `location` since Iceberg 1.7, is in every 1.x release)
  @nowarn("cat=deprecation")
  private def location(task: ScanTask): String = task.asFileScanTask.file.path.toString

  /** `column` within one of `ranges`, as an Iceberg expression. */
  private def anyOf(column: String, dataType: DataType, ranges: Seq[(Long, Long)]): IcebergExpression = {
    def v(x: Long): AnyRef = dataType match {
      case LongType => java.lang.Long.valueOf(x)
      case _ => java.lang.Integer.valueOf(x.toInt) // int, short, byte; a date as its days
    }
    if (ranges.isEmpty) Expressions.alwaysFalse()
    else ranges.map { case (lo, hi) =>
      if (lo == hi) Expressions.equal[AnyRef](column, v(lo))
      else Expressions.and(Expressions.greaterThanOrEqual[AnyRef](column, v(lo)),
        Expressions.lessThanOrEqual[AnyRef](column, v(hi)))
    }.reduce[IcebergExpression](Expressions.or)
  }

  /** A copy of input partition `p` reading `group`: made through its own serialization (as it is sent to the
   * executors), its fields then set to `p`'s (the transient ones too: its preferred locations) but the group. */
  private def withTasks(p: InputPartition, group: ScanTaskGroup[ScanTask]): InputPartition = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    try out.writeObject(p) finally out.close()
    val in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)) {
      override def resolveClass(d: java.io.ObjectStreamClass): Class[_] =
        Class.forName(d.getName, false, p.getClass.getClassLoader)
    }
    val copy = try in.readObject().asInstanceOf[InputPartition] finally in.close()
    Reflection.hierarchy(p.getClass).flatMap(_.getDeclaredFields)
      .filterNot(f => java.lang.reflect.Modifier.isStatic(f.getModifiers)).foreach { f =>
        f.setAccessible(true)
        f.set(copy, if (f.getName == "taskGroup") group else f.get(p))
      }
    copy
  }
}
