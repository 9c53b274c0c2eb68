package sieve.formats

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.iceberg.{BaseScanTaskGroup, ScanTask, ScanTaskGroup}

import org.apache.spark.sql.connector.read.{InputPartition, Scan}

import sieve.keyset.KeyRanges

/**
 * An Iceberg scan's input partitions less the data files whose column bounds (the lower and upper bounds,
 * null and value counts its manifests keep per field id) hold no key of a set of ranges: read from the data
 * manifests of the scan's snapshot by the column's field id ([[IcebergFileBounds]]: a renamed column keeps its
 * field id; a column added since has no bounds in older files, which are read), not planned again. A file left out
 * is never opened; its delete files go with it, and the files kept are read with theirs, so deletes stay Iceberg's.
 *
 * Runs only on an Iceberg scan (its classes are then on the classpath); the scan's own Iceberg scan and each
 * input partition's task group are private to Iceberg's Spark classes and read by reflection: a release where
 * they differ declines, and the scan reads every file.
 */
object IcebergTasks {
  /** The kept input partitions (a partition with some of its tasks dropped is a copy), with the data files
   * before and after. */
  final case class Pruned(partitions: Seq[InputPartition], filesBefore: Long, filesAfter: Long)

  /** `partitions` of `scan` less the files none of whose rows can hold `column` within `ranges` (the caller has
   * checked the column is integral or a date); Left: why the files are not pruned. */
  def prune(scan: Scan, partitions: Seq[InputPartition], column: String, ranges: KeyRanges): Either[String, Pruned] =
    if (!TableFormats.isIceberg(scan)) Left("not an Iceberg scan")
    else IcebergBinding.readField(scan, column).flatMap { case (table, snapshot, field) =>
      try Right {
        val bounds = if (snapshot == null) Map.empty[String, FileBounds]
          else IcebergFileBounds.of(table, snapshot, field)
        var (before, after) = (0L, 0L)
        val kept = partitions.flatMap { p =>
          val group = Reflection.field(p, "taskGroup").asInstanceOf[ScanTaskGroup[ScanTask]]
          val tasks = group.tasks.asScala.toSeq
          val keep = tasks.filter(t => !t.isFileScanTask ||
            bounds.get(IcebergFileBounds.location(t.asFileScanTask.file)).forall(_.mayHold(ranges)))
          before += tasks.count(_.isFileScanTask)
          after += keep.count(_.isFileScanTask)
          if (keep.size == tasks.size) Some(p)
          else if (keep.isEmpty) None
          else Some(withTasks(p, new BaseScanTaskGroup[ScanTask](group.groupingKey, keep.asJava)))
        }
        Pruned(kept, before, after)
      } catch {
        // (an Iceberg release whose classes differ: a missing method or class is a LinkageError, not an Exception)
        case e @ (NonFatal(_) | _: LinkageError) => Left(Reflection.failure("reading Iceberg's manifests", e))
      }
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
