package org.apache.spark.sql

import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.connector.expressions.{LiteralValue, Literal => V2Literal}

/** A Catalyst literal as a data source V2 one (its internal value and type), as Spark's own DPP hands its keys to
 * a V2 scan (`LiteralValue` is Spark-internal; this is the one place spark-sieve makes one). */
object SieveV2Literals {
  def of(literal: Literal): V2Literal[_] = LiteralValue(literal.value, literal.dataType)
}
