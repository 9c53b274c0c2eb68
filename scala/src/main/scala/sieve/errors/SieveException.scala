package sieve.errors

/**
 * Every error spark-sieve raises on purpose. The Python bindings map each subclass to a
 * `spark_sieve.SieveError` subclass of the same role by class name, so keep names stable.
 */
class SieveException(message: String, cause: Throwable = null)
  extends RuntimeException(message, cause)

/** A `spark.sieve.*` setting that is unknown or holds a value of the wrong type or range. */
class SieveConfigException(val key: String, message: String)
  extends SieveException(s"$key: $message")

/** A value source (file, directory or DataFrame) that is missing, unreadable or of an unknown format. */
class SieveSourceException(val source: String, message: String)
  extends SieveException(s"$source: $message")

/** A column that the input or a value source does not have. */
class SieveColumnException(val column: String, message: String)
  extends SieveException(s"column '$column': $message")

/** A filter tree that is malformed: an empty AND/OR, an unknown operator, bad JSON. */
class SieveTreeException(val node: String, message: String)
  extends SieveException(s"filter tree at $node: $message")
