package sieve.bulkfilter

import java.util.Locale

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.{DataFrame, SparkSession}

import sieve.errors.SieveSourceException

/** Reads a value source from a path: text (one value per line), csv (header row), parquet, json, orc,
 * or a directory of one of them. The format comes from the spec, else from the file names. */
object ValueSources {
  val Formats: Seq[String] = Seq("text", "csv", "parquet", "json", "orc")

  private val byExtension = Map(
    "txt" -> "text", "text" -> "text", "lst" -> "text", "csv" -> "csv", "parquet" -> "parquet",
    "json" -> "json", "jsonl" -> "json", "ndjson" -> "json", "orc" -> "orc")

  def read(spark: SparkSession, path: String, format: Option[String]): DataFrame = {
    val hadoopPath = new Path(path)
    val fs = try hadoopPath.getFileSystem(spark.sparkContext.hadoopConfiguration) catch {
      case e: Exception => throw new SieveSourceException(path, s"cannot open its file system: ${e.getMessage}")
    }
    if (!fs.exists(hadoopPath)) throw new SieveSourceException(path, "no such file or directory")
    val fmt = format.map(_.toLowerCase(Locale.ROOT)) match {
      case Some(f) if Formats.contains(f) => f
      case Some(f) => throw new SieveSourceException(path, s"unsupported format '$f' (supported: ${Formats.mkString(", ")})")
      case None => detect(fs, hadoopPath, path)
    }
    val reader = spark.read
    fmt match {
      case "text" => reader.text(path)
      case "csv" => reader.option("header", "true").csv(path)
      case other => reader.format(other).load(path)
    }
  }

  private def detect(fs: FileSystem, p: Path, path: String): String = {
    val names =
      if (fs.getFileStatus(p).isDirectory) {
        fs.listStatus(p).filter(_.isFile).map(_.getPath.getName)
          .filterNot(n => n.startsWith("_") || n.startsWith(".")).toSeq
      } else Seq(p.getName)
    val kinds = names.flatMap(n => formatOf(n)).distinct
    kinds match {
      case Seq(one) => one
      case Seq() => throw new SieveSourceException(path,
        s"cannot tell its format from the file name${if (names.size > 1) "s" else ""}; pass format= " +
          s"(${Formats.mkString(", ")}); known extensions: ${byExtension.keys.toSeq.sorted.mkString(", ")}")
      case many => throw new SieveSourceException(path, s"holds files of several formats (${many.mkString(", ")})")
    }
  }

  /** `part-0.snappy.parquet` -> parquet, `values.csv.gz` -> csv. */
  private def formatOf(name: String): Option[String] =
    name.toLowerCase(Locale.ROOT).split('.').drop(1).reverse.collectFirst {
      case ext if byExtension.contains(ext) => byExtension(ext)
    }
}
