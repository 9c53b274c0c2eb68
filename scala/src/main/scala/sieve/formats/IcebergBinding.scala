package sieve.formats

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.iceberg.{ScanTask, Schema, Table, Scan => IcebergScan}

import org.apache.spark.sql.connector.read.Scan

/**
 * The name under which a key column of an Iceberg scan is bound where Iceberg's planning tests an expression
 * against the files: its manifests' bounds are read through the table's partition specs, whose schema is the
 * table's *current* one, so a name is bound as the table names it today. A scan of an older snapshot or a tag
 * reads that snapshot's schema, where the same name may be another column (`RENAME COLUMN k TO k_old`, then `j`
 * to `k`): a filter by the scan's own name would keep the files where today's `k` may hold a key. So the
 * column is found by its field id in the schema the scan reads, and its name in the current schema is the one
 * handed to Iceberg — only where that name binds back to the same field id in every spec's schema (a dropped
 * field, or a name of two fields, declines).
 *
 * Runs only on an Iceberg scan (its classes are then on the classpath).
 */
object IcebergBinding {
  /** The name to bind `column` of `scan` by in Iceberg's planning (Right), or why no name binds it to the field the
   * scan reads (Left). */
  def boundName(scan: Scan, column: String): Either[String, String] =
    if (scan.getClass.getSimpleName == "SparkCopyOnWriteScan") {
      Left("a copy-on-write operation's scan (Iceberg rewrites the files it reads)")
    } else try {
      val planned = Reflection.call(scan, "scan").asInstanceOf[IcebergScan[_, ScanTask, _]]
      val table = Reflection.call(scan, "table").asInstanceOf[Table]
      if (planned == null || table == null) Left("the scan has no Iceberg scan to plan")
      else bound(planned.schema(), table.specs().values.asScala.map(_.schema()).toSeq, column,
        planned.isCaseSensitive)
    } catch {
      // (an Iceberg release whose classes differ: a missing method or class is a LinkageError, not an Exception)
      case e @ (NonFatal(_) | _: LinkageError) => Left(Reflection.failure("Iceberg's scan", e))
    }

  /** The name of `column` of `read` (the schema a scan reads) in each of `bindings` (the schemas Iceberg binds
   * expressions with), when it is one name that binds there to the same field id. */
  def bound(read: Schema, bindings: Seq[Schema], column: String, caseSensitive: Boolean): Either[String, String] = {
    def find(schema: Schema, name: String) =
      Option(if (caseSensitive) schema.findField(name) else schema.caseInsensitiveFindField(name))
    find(read, column).map(_.fieldId) match {
      case None => Left(s"$column is no field of the schema the scan reads")
      case Some(id) =>
        val names = bindings.map(schema => Option(schema.findField(id)).map(_.name)
          .filter(name => find(schema, name).exists(_.fieldId == id)))
        names.distinct match {
          case Seq(Some(name)) => Right(name)
          case _ => Left(s"$column (field id $id) has no name binding it in the table's current schema")
        }
    }
  }
}
