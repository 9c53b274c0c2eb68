package sieve.errors

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.trees.Origin

/**
 * Every error spark-sieve raises on purpose. Each is a Spark error with its own condition
 * (`SparkThrowable.getCondition`, `SIEVE_*`), and the mistakes it reports are the user's, so each is
 * an AnalysisException: PySpark's own conversion (classic and Connect) hands it over with its message
 * first. The condition, not the class, identifies an error: Spark re-wraps an AnalysisException raised
 * during analysis into one of its own classes, keeping condition and message (only a Spark 3.5 Connect
 * client, sent no condition, goes by the class name). The Python bindings take the pairs from
 * [[SieveException.conditions]] (generated into the wheel) and raise `spark_sieve.<Role>Error` for
 * `Sieve<Role>Exception`, so keep names stable.
 */
trait SieveException extends org.apache.spark.SparkThrowable {
  override def getSqlState: String = "42000"
}

object SieveException {
  /** The spark-sieve error in `e`'s causes (one a task raised arrives wrapped in the job's failure). */
  def causeOf(e: Throwable): Option[Throwable] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20).collectFirst { case s: SieveException => s }

  /** Each error class's name with its condition (each declared once, below): what Python maps its errors by. */
  def conditions: Seq[(String, String)] =
    Seq(new SieveConfigException("", ""), new SieveSourceException("", ""), new SieveColumnException("", ""),
      new SieveTreeException("", "")).map(e => e.getClass.getName -> e.errorClass.get)

  /** What starts the text of a bad value a task raises with `raise_error` (a value source Spark's own scan
   * reads, joined, not held as a set): a [[SieveSourceException]]'s error, though none is thrown. */
  val RaisedPrefix = "spark-sieve: "
}

/** Spark's AnalysisException with our condition and message, no error-class registry lookup. */
abstract class SieveAnalysisException(condition: String, message: String)
  extends AnalysisException(message = message, errorClass = Some(condition), messageParameters = Map("message" -> message))
  with SieveException {
  // The analyzer adds a SQL text's position by copying into a plain AnalysisException (`sieve_bulk_filter`'s
  // errors): keep the class, which callers catch by, and the message, which names the node or argument.
  override def withPosition(origin: Origin): AnalysisException = this
}

/** A `spark.sieve.*` setting that is unknown or holds a value of the wrong type or range. */
class SieveConfigException(val key: String, message: String)
  extends SieveAnalysisException("SIEVE_CONFIG_INVALID", s"$key: $message")

/** A value source (file, directory or DataFrame) that is missing, unreadable or of an unknown format, or
 * holds a value that does not parse as its key's type. `prefixed`: the message starts with the source. */
class SieveSourceException(val source: String, message: String, prefixed: Boolean = true)
  extends SieveAnalysisException("SIEVE_SOURCE_INVALID", if (prefixed) s"$source: $message" else message)

/** A column that the input or a value source does not have, or that cannot be compared as asked. */
class SieveColumnException(val column: String, message: String)
  extends SieveAnalysisException("SIEVE_COLUMN_INVALID", s"column '$column': $message")

/** A filter tree that is malformed: an empty AND/OR, an unknown operator, bad JSON. */
class SieveTreeException(val node: String, message: String)
  extends SieveAnalysisException("SIEVE_TREE_INVALID", s"filter tree at $node: $message")
