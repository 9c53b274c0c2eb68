package sieve.scan

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

/** A file index that lists through `delegate` and derives its listing from it, once per pair of filters (a
 * scan may list more than once: its lazy file listings); everything else is `delegate`'s. */
abstract class DerivedFileIndex(delegate: FileIndex) extends FileIndex {
  override def rootPaths: Seq[Path] = delegate.rootPaths
  override def inputFiles: Array[String] = delegate.inputFiles
  override def refresh(): Unit = delegate.refresh()
  override def sizeInBytes: Long = delegate.sizeInBytes
  override def partitionSchema: StructType = delegate.partitionSchema

  /** The listing under these filters, derived from `delegate`'s. */
  protected def list(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory]

  @transient private lazy val listings =
    new java.util.concurrent.ConcurrentHashMap[(Seq[Expression], Seq[Expression]), Seq[PartitionDirectory]]()

  final override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    listings.computeIfAbsent((partitionFilters, dataFilters), _ => list(partitionFilters, dataFilters))
}
