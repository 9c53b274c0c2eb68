package sieve.formats

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import org.apache.iceberg.{PartitionSpec, ScanTask, Schema, Snapshot, Table, Scan => IcebergScan}
import org.apache.iceberg.types.Type.TypeID
import org.apache.iceberg.types.Types

import org.apache.spark.sql.connector.read.Scan

/**
 * A key column of an Iceberg scan as Iceberg knows it: the field the scan reads (by its field id, whose bounds
 * [[IcebergTasks]] reads), and the name under which it is bound where Iceberg tests an expression against the
 * files (the source's runtime filtering, `SourceRuntimeFiltering`): a name is bound in the schemas
 * of the partition specs the scan plans with. Up to Iceberg 1.10 that is the table's *current* schema even for a snapshot or tag
 * read, which reads that snapshot's schema, where the same name may be another column (`RENAME COLUMN k TO
 * k_old`, then `j` to `k`): a filter by the scan's own name would keep the files where today's `k` may hold a
 * key. From 1.11 a snapshot scan plans with its specs bound to the snapshot's schema (`SnapshotScan.specs()`).
 * So the column is found by its field id in the schema the scan reads, and the name handed to Iceberg is that
 * field's name in the schemas the scan plans with — only where that name binds back to the same field id in
 * each of them (a field dropped since, or a name of two fields, declines).
 *
 * Runs only on an Iceberg scan (its classes are then on the classpath).
 */
object IcebergBinding {
  /** The field `column` of `scan` reads (found by name in the schema it reads, then known by its field id), with the
   * table and the snapshot the scan plans (null: a table without one), when it is an int, long or date column. */
  def readField(scan: Scan, column: String): Either[String, (Table, Snapshot, Types.NestedField)] =
    schemas(scan).flatMap { case (read, _, _, caseSensitive) =>
      find(read, column, caseSensitive) match {
        case None => Left(s"$column is no field of the schema the scan reads")
        case Some(f) if !Set(TypeID.INTEGER, TypeID.LONG, TypeID.DATE).contains(f.`type`.typeId) =>
          Left(s"$column is a ${f.`type`} column in the table (bounds of int, long and date columns are read)")
        case Some(f) =>
          try {
            val planned = Reflection.call(scan, "scan")
            Right((Reflection.call(scan, "table").asInstanceOf[Table], Reflection.call(planned, "snapshot")
              .asInstanceOf[Snapshot], f))
          } catch {
            case e @ (NonFatal(_) | _: LinkageError) => Left(Reflection.failure("Iceberg's scan", e))
          }
      }
    }

  /** Right where `column` of `scan` binds by its own name to the field the scan reads in every schema Iceberg may
   * bind it with: those the scan plans with and the table's current one (Iceberg's runtime filtering projects a
   * filter onto the partitions of the table's specs). */
  def unchanged(scan: Scan, column: String): Either[String, Unit] =
    schemas(scan).flatMap { case (read, planning, current, caseSensitive) =>
      bound(read, planning ++ current, column, caseSensitive).flatMap { name =>
        if (name == column) Right(())
        else Left(s"$column is named $name in the schema Iceberg binds the source's runtime filters with")
      }
    }

  /** The scan's read schema, the schemas of the specs it plans with, those of the table's specs, and whether it
   * is case sensitive. */
  private def schemas(scan: Scan): Either[String, (Schema, Seq[Schema], Seq[Schema], Boolean)] =
    if (scan.getClass.getSimpleName == "SparkCopyOnWriteScan") {
      Left("a copy-on-write operation's scan (Iceberg rewrites the files it reads)")
    } else try {
      val planned = Reflection.call(scan, "scan").asInstanceOf[IcebergScan[_, ScanTask, _]]
      val table = Reflection.call(scan, "table").asInstanceOf[Table]
      if (planned == null || table == null) Left("the scan has no Iceberg scan to plan")
      else {
        def of(specs: java.util.Map[Integer, PartitionSpec]) = specs.values.asScala.map(_.schema()).toSeq
        Right((planned.schema(), of(planningSpecs(planned).getOrElse(table.specs())), of(table.specs()),
          planned.isCaseSensitive))
      }
    } catch {
      // (an Iceberg release whose classes differ: a missing method or class is a LinkageError, not an Exception)
      case e @ (NonFatal(_) | _: LinkageError) => Left(Reflection.failure("Iceberg's scan", e))
    }

  /** The specs `planned` plans with where it says (`specs()`, Iceberg 1.11 on; a batch scan's through the table
   * scan it adapts); None before 1.11, whose planning takes the table's. */
  private def planningSpecs(planned: AnyRef): Option[java.util.Map[Integer, PartitionSpec]] = {
    def specs(o: AnyRef) = Try(Reflection.call(o, "specs")).toOption.collect {
      case m: java.util.Map[_, _] => m.asInstanceOf[java.util.Map[Integer, PartitionSpec]]
    }
    specs(planned).orElse(Try(Reflection.field(planned, "scan")).toOption.filter(_ != null).flatMap(specs))
  }

  /** The name of `column` of `read` (the schema a scan reads) in each of `bindings` (the schemas Iceberg binds
   * expressions with), when it is one name that binds there to the same field id. */
  def bound(read: Schema, bindings: Seq[Schema], column: String, caseSensitive: Boolean): Either[String, String] = {
    def find(schema: Schema, name: String) = IcebergBinding.find(schema, name, caseSensitive)
    find(read, column).map(_.fieldId) match {
      case None => Left(s"$column is no field of the schema the scan reads")
      case Some(id) =>
        val names = bindings.map(schema => Option(schema.findField(id)).map(_.name)
          .filter(name => find(schema, name).exists(_.fieldId == id)))
        names.distinct match {
          case Seq(Some(name)) => Right(name)
          case _ => Left(s"$column (field id $id) has no name binding it in the schemas Iceberg plans the scan with")
        }
    }
  }

  private def find(schema: Schema, name: String, caseSensitive: Boolean): Option[Types.NestedField] =
    Option(if (caseSensitive) schema.findField(name) else schema.caseInsensitiveFindField(name))
}
