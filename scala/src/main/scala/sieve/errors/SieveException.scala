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
