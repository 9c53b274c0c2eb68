package org.apache.spark.sql

import org.apache.spark.SparkThrowable

/** Test-only: a Spark error's condition (`SparkThrowable.getErrorClass`; getCondition from 4.0). */
object ErrorCondition {
  def of(e: SparkThrowable): String = e.getErrorClass
}
