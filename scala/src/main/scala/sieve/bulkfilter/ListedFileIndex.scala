package sieve.bulkfilter

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

/**
 * A file index over files spark-sieve has already listed (to check them and to know which leaf owns
 * which file). Reading through it lists nothing again: Spark's own index would list every path once
 * more, with a distributed job for more than 32 of them.
 */
class ListedFileIndex(files: Seq[FileStatus]) extends FileIndex {
  override def rootPaths: Seq[Path] = files.map(_.getPath)
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    Seq(PartitionDirectory(InternalRow.empty, files.toArray))
  override def inputFiles: Array[String] = files.map(_.getPath.toString).toArray
  override def refresh(): Unit = {}
  override def sizeInBytes: Long = files.map(_.getLen).sum
  override def partitionSchema: StructType = new StructType()
  override def toString: String = s"ListedFileIndex(${files.size} files)"
}
