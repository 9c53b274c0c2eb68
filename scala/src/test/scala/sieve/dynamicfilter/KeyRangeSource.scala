package sieve.dynamicfilter

import java.util

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.{Expressions, Literal, NamedReference, Transform}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.types.{LongType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** A data source V2 table for the tests, `spark.read.format(classOf[KeyRangeSource].getName).option("rows", n)
 * .option("perPartition", m)`: rows (k, v) with k in [0, n) and v = k * 10, read in input partitions of m
 * consecutive keys, which its scan filters at run time by k (`SupportsRuntimeV2Filtering`: IN lists and `>=` /
 * `<=` bounds), as a table format does by a partition column. No statistics: Spark's DPP does not pay on it. */
class KeyRangeSource extends TableProvider {
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = KeyRangeSource.schema
  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: util.Map[String, String]): Table =
    new KeyRangeTable(properties.get("rows").toLong, properties.get("perPartition").toLong)
}

object KeyRangeSource {
  val schema: StructType = new StructType().add("k", LongType).add("v", LongType)
}

class KeyRangeTable(rows: Long, perPartition: Long) extends Table with SupportsRead {
  override def name(): String = "key_range_source"
  override def schema(): StructType = KeyRangeSource.schema
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new KeyRangeScan(rows, perPartition)
}

final case class KeyRangePartition(lo: Long, hi: Long) extends InputPartition

class KeyRangeScan(rows: Long, perPartition: Long) extends Scan with Batch with SupportsRuntimeV2Filtering {
  private var kept: Seq[KeyRangePartition] =
    (0L until rows by perPartition).map(lo => KeyRangePartition(lo, math.min(lo + perPartition, rows) - 1))

  /** The predicates this scan was handed at run time, for the tests to see. */
  @volatile var handed: Seq[Predicate] = Nil

  override def readSchema(): StructType = KeyRangeSource.schema
  override def toBatch: Batch = this
  override def planInputPartitions(): Array[InputPartition] = kept.toArray
  override def createReaderFactory(): PartitionReaderFactory = KeyRangeReaders
  override def filterAttributes(): Array[NamedReference] = Array(Expressions.column("k"))

  override def filter(predicates: Array[Predicate]): Unit = {
    handed ++= predicates
    def value(i: Int, p: Predicate) = p.children()(i).asInstanceOf[Literal[_]].value.asInstanceOf[Long]
    predicates.foreach { p =>
      kept = p.name() match {
        case "IN" => val keys = (1 until p.children().length).map(value(_, p)); kept.filter(r => keys.exists(k => k >= r.lo && k <= r.hi))
        case ">=" => kept.filter(_.hi >= value(1, p))
        case "<=" => kept.filter(_.lo <= value(1, p))
        case _ => kept
      }
    }
  }
}

object KeyRangeReaders extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val range = partition.asInstanceOf[KeyRangePartition]
    new PartitionReader[InternalRow] {
      private var k = range.lo - 1
      override def next(): Boolean = { k += 1; k <= range.hi }
      override def get(): InternalRow = InternalRow(k, k * 10)
      override def close(): Unit = ()
    }
  }
}
