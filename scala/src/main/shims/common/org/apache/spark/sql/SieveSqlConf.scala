package org.apache.spark.sql

import org.apache.spark.sql.internal.SQLConf

/** Spark's SQL conf registry (its builder is Spark-internal; this is the one place spark-sieve uses it). */
object SieveSqlConf {
  /**
   * Registers `key` with Spark's SQL conf, so that `spark.conf.get` returns its default and `SET -v`
   * lists it with its doc. String-typed: spark-sieve parses its own values when it reads them, so a
   * bad value fails a query with spark-sieve's typed error and `SET` can always correct it. Once per JVM.
   * An `internal` one is known to `spark.conf.get` but not listed by `SET -v`, as Spark's own internal ones.
   */
  def register(key: String, doc: String, default: String, internal: Boolean): Unit = synchronized {
    if (!SQLConf.containsConfigKey(key)) {
      val builder = SQLConf.buildConf(key).doc(doc).version("spark-sieve 0.1.0")
      (if (internal) builder.internal() else builder).stringConf.createWithDefault(default)
    }
  }
}
