package sieve.bulkfilter

import java.util.Locale

import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}
import org.apache.spark.sql.{DataFrame, SieveDatasets, SparkSession, SparkShims}
import org.apache.spark.sql.execution.datasources.HadoopFsRelation
import org.apache.spark.sql.execution.datasources.text.TextFileFormat
import org.apache.spark.sql.types.{StringType, StructType}

import sieve.errors.SieveSourceException

/**
 * Value sources on file systems: text (one value per line), csv (header row), parquet, json, orc, or a
 * directory of one of them. The format comes from the spec, else from the file names.
 */
object ValueSources {
  val Formats: Seq[String] = Seq("text", "csv", "parquet", "json", "orc")

  private val byExtension = Map(
    "txt" -> "text", "text" -> "text", "lst" -> "text", "csv" -> "csv", "parquet" -> "parquet",
    "json" -> "json", "jsonl" -> "json", "ndjson" -> "json", "orc" -> "orc")

  /** A checked path: its format and its data files. */
  final case class Resolved(path: String, format: String, statuses: Seq[FileStatus]) {
    /** Each file named as `_metadata.file_path` names it when read through [[readText]]. */
    def files: Seq[String] = statuses.map(_.getPath.toUri.toString)
  }

  def resolve(spark: SparkSession, path: String, format: Option[String]): Resolved = {
    val hadoopPath = new Path(path)
    val fs = try hadoopPath.getFileSystem(spark.sparkContext.hadoopConfiguration) catch {
      case e: Exception => throw new SieveSourceException(path, s"cannot open its file system: ${e.getMessage}")
    }
    if (!fs.exists(hadoopPath)) throw new SieveSourceException(path, "no such file or directory")
    val files = dataFiles(fs, hadoopPath)
    if (files.isEmpty) {
      throw new SieveSourceException(path, "is a directory with no data files (an empty value set is an " +
        "empty file: an empty text file, or a parquet file with no rows)")
    }
    val fmt = format.map(_.toLowerCase(Locale.ROOT)) match {
      case Some(f) if Formats.contains(f) => f
      case Some(f) => throw new SieveSourceException(path, s"unsupported format '$f' (supported: ${Formats.mkString(", ")})")
      case None => detect(files.map(_.getPath.getName), path)
    }
    Resolved(path, fmt, files)
  }

  /** All `files` (text) in one scan, with nothing listed again; `_metadata.file_path` tells them apart. */
  def readText(spark: SparkSession, files: Seq[FileStatus]): DataFrame = {
    val relation = HadoopFsRelation(new ListedFileIndex(files), new StructType(),
      new StructType().add("value", StringType), None, new TextFileFormat, Map.empty)(spark)
    SparkShims.baseRelationToDataFrame(spark, relation)
  }

  /** One DataFrame over `paths` (all of one format), each read as the path it is: `v[1].csv` is that
   * file, not a glob matching `v1.csv`. */
  def read(spark: SparkSession, format: String, paths: Seq[String]): DataFrame = {
    val reader = spark.read.option(SieveDatasets.NoGlobbing._1, SieveDatasets.NoGlobbing._2)
    format match {
      case "text" => reader.text(paths: _*)
      case "csv" => reader.option("header", "true").csv(paths: _*)
      case other => reader.format(other).load(paths: _*)
    }
  }

  /** The file, or the data files of the directory; paths canonical (`file:/a%20b`, not `file:///a b`)
   * so that a file's name is the same string wherever it is printed. */
  private def dataFiles(fs: FileSystem, p: Path): Seq[FileStatus] = {
    val status = fs.getFileStatus(p)
    val files =
      if (!status.isDirectory) Seq(status)
      else fs.listStatus(p).filter(_.isFile)
        .filterNot(f => f.getPath.getName.startsWith("_") || f.getPath.getName.startsWith(".")).toSeq
    files.sortBy(_.getPath.toString).map { f =>
      val u = f.getPath.toUri
      f.setPath(new Path(new java.net.URI(u.getScheme, u.getAuthority, u.getPath, u.getQuery, u.getFragment)))
      f
    }
  }

  private def detect(names: Seq[String], path: String): String =
    names.flatMap(formatOf).distinct match {
      case Seq(one) => one
      case Seq() => throw new SieveSourceException(path,
        s"cannot tell its format from the file name${if (names.size > 1) "s" else ""}; pass format= " +
          s"(${Formats.mkString(", ")}); known extensions: ${byExtension.keys.toSeq.sorted.mkString(", ")}")
      case many => throw new SieveSourceException(path, s"holds files of several formats (${many.mkString(", ")})")
    }

  /** `part-0.snappy.parquet` -> parquet, `values.csv.gz` -> csv. */
  private def formatOf(name: String): Option[String] =
    name.toLowerCase(Locale.ROOT).split('.').drop(1).reverse.collectFirst {
      case ext if byExtension.contains(ext) => byExtension(ext)
    }
}
