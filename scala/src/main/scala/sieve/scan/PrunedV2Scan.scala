package sieve.scan

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan}
import org.apache.spark.sql.types.StructType

/** A data source V2 scan that reads `partitions` of `delegate`'s (fewer: those a dynamic filter's keys may be
 * in, none at all when no key is in the table), in every other respect `delegate`. `columnar`: whether the
 * scan it stands for read columnar batches — fixed, not asked of the partitions: a source whose partitions
 * decide (`PARTITION_DEFINED`, Iceberg's) would call a scan of none row-based, and the `ColumnarToRow` planned
 * above it fail its assertion. */
final class PrunedV2Scan(val delegate: Scan, partitions: Seq[InputPartition], columnar: Boolean) extends Scan {
  override def readSchema(): StructType = delegate.readSchema()
  override def description(): String = s"${delegate.description()}, pruned by dynamic-filter keys"
  override def columnarSupportMode(): Scan.ColumnarSupportMode =
    if (columnar) Scan.ColumnarSupportMode.SUPPORTED else Scan.ColumnarSupportMode.UNSUPPORTED
  override def supportedCustomMetrics(): Array[CustomMetric] = delegate.supportedCustomMetrics()
  override def reportDriverMetrics(): Array[CustomTaskMetric] = delegate.reportDriverMetrics()

  override def toBatch: Batch = {
    val batch = delegate.toBatch
    new Batch {
      override def planInputPartitions(): Array[InputPartition] = partitions.toArray
      override def createReaderFactory(): PartitionReaderFactory = batch.createReaderFactory()
    }
  }

  override def equals(other: Any): Boolean = other match {
    case p: PrunedV2Scan => (p.delegate == delegate) && p.toBatch.planInputPartitions().sameElements(partitions)
    case _ => false
  }
  override def hashCode(): Int = delegate.hashCode() * 31 + partitions.size
}
