package sieve.scan

import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BoundReference, Expression, PlanExpression,
  Predicate}
import org.apache.spark.sql.execution.{ExecSubqueryExpression, FileSourceScanExec}
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex

/**
 * What a file scan reads once Spark's dynamic partition pruning has run: the bytes of the columns it reads
 * in the files of the partitions DPP keeps. Spark's estimate and the planner see the whole table (TPC-DS
 * q6 at sf10: store_sales' 138 MB, of which DPP keeps one month, 1.6%); a dynamic filter that pays on the
 * table may not pay on that month. Asked on the driver as the scan's stage starts, when DPP's subqueries
 * can run (Spark waits for them there anyway).
 */
object PrunedScanBytes {
  /** The columns' bytes in the files kept, of how many files the static filters keep. */
  final case class Kept(bytes: BigInt, files: Int, ofFiles: Int)

  /** What `scan` reads after its dynamic partition filters, which this runs (their subqueries are computed
   * once and cached); None without such a filter, or for a scan whose files are not listed in memory
   * already (a catalog table's partitions would be listed again). Mirrors Spark's own pruning
   * (`FileSourceScanLike.dynamicallySelectedPartitions`): the static listing, then DPP's predicate on each
   * partition's values. */
  def apply(scan: FileSourceScanExec): Option[Kept] = {
    val dynamic = scan.partitionFilters.filter(isDynamic)
    if (dynamic.isEmpty || !scan.relation.location.isInstanceOf[PartitioningAwareFileIndex]) None
    else {
      dynamic.foreach(_.foreach { case s: ExecSubqueryExpression => s.updateResult(); case _ => })
      val partitions = scan.relation.partitionSchema
      val predicate = Predicate.createInterpreted(dynamic.reduce(And).transform {
        case a: AttributeReference =>
          val i = partitions.indexWhere(_.name == a.name)
          BoundReference(i, partitions(i).dataType, nullable = true)
      })
      val listed = scan.relation.location.listFiles(staticFilters(scan), Nil)
      val kept = listed.filter(p => predicate.eval(p.values))
      val fileBytes = kept.flatMap(_.files.map(_.fileStatus.getLen)).map(BigInt(_)).sum
      Some(Kept(readShare(scan, fileBytes), kept.map(_.files.size).sum, listed.map(_.files.size).sum))
    }
  }

  /** `fileBytes` of `scan`'s files, at the share of their columns (by width) the scan reads. */
  def readShare(scan: FileSourceScanExec, fileBytes: BigInt): BigInt = {
    val all = math.max(scan.relation.dataSchema.map(_.dataType.defaultSize).sum, 1)
    fileBytes * scan.requiredSchema.map(_.dataType.defaultSize).sum / all
  }

  /** The static partition filters only (DPP's need their subquery run): a superset of the files read. */
  def staticFilters(scan: FileSourceScanExec): Seq[Expression] = scan.partitionFilters.filterNot(isDynamic)

  /** A partition filter of DPP's (it holds a subquery). */
  private def isDynamic(e: Expression): Boolean = e.exists(_.isInstanceOf[PlanExpression[_]])
}
