package sieve.scan

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan}
import org.apache.spark.sql.types.StructType

/** A data source V2 scan that reads `partitions` of `delegate`'s (fewer: those a dynamic filter's keys may be
 * in), in every other respect `delegate`. */
final class PrunedV2Scan(val delegate: Scan, partitions: Seq[InputPartition]) extends Scan {
  override def readSchema(): StructType = delegate.readSchema()
  override def description(): String = s"${delegate.description()}, pruned by dynamic-filter keys"
  override def columnarSupportMode(): Scan.ColumnarSupportMode = delegate.columnarSupportMode()
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
