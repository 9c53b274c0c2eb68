package org.apache.spark.sql

import org.apache.spark.SparkThrowable

/** Test-only: a Spark error's condition (`SparkThrowable.getCondition`; getErrorClass before 4.0). */
object ErrorCondition {
  def of(e: SparkThrowable): String = e.getCondition
}
