package sieve.bulkfilter

import org.apache.spark.sql.{AnalysisException, SieveDatasets, SparkSession, SparkShims}
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, BinaryComparison, Cast,
  EqualTo, Expression}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, Project}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{ByteType, DataType, DoubleType, FloatType, IntegerType, LongType, ShortType,
  StringType}

import sieve.plan.Preconditions

import sieve.errors.SieveColumnException

/**
 * How a leaf compares its key column with its values: as Spark's own `key = value` would, so that
 * include is EXISTS and exclude NOT EXISTS whatever the values' type, and fails only where that
 * comparison fails.
 *  - both sides are compared in the type the session's analyzer picks for `=` (a DECIMAL key against
 *    text values as DOUBLE, an INT key against text under ANSI as BIGINT, a STRING key against INT values
 *    as BIGINT; strings against a string key in the key's collation);
 *  - the values are cast with the session's cast: under ANSI a value that does not cast fails the query
 *    (naming it), otherwise it is NULL and matches nothing; a key is cast the same way, so a STRING key
 *    that is no number fails under ANSI, as Spark's `=` does for that row;
 *  - where that type only widens an integral key (INT to BIGINT), the values are held in the key's own
 *    type instead, those outside its range dropped (no key equals them): the key is then compared as it
 *    is, pushed into the scan, with no cast per row.
 */
object ValueComparison {
  def isString(t: DataType): Boolean = t.isInstanceOf[StringType]

  /** Leaf values of a source compared in `compared`, held in `held`, cast under ANSI (`ansi`) or not. */
  final case class Comparison(compared: DataType, held: DataType, ansi: Boolean)

  /** How `key` is compared with the values of `source` (of type `values`) in `spark`'s session. */
  def of(spark: SparkSession, key: Attribute, values: DataType, source: String): Comparison = {
    val compared =
      if (values == key.dataType || (isString(values) && isString(key.dataType))) key.dataType
      else comparisonType(spark, key.dataType, values).getOrElse(throw new SieveColumnException(key.name,
        s"its type ${key.dataType.sql} cannot be compared with the ${values.sql} values of $source"))
    val held = if (isIntegral(key.dataType) && isIntegral(compared)) key.dataType else compared
    Comparison(compared, held, spark.sessionState.conf.ansiEnabled)
  }

  private def isIntegral(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }

  /** The range of an integral type's values. */
  def integralRange(t: DataType): (Long, Long) = t match {
    case ByteType => (Byte.MinValue.toLong, Byte.MaxValue.toLong)
    case ShortType => (Short.MinValue.toLong, Short.MaxValue.toLong)
    case IntegerType => (Int.MinValue.toLong, Int.MaxValue.toLong)
    case LongType => (Long.MinValue, Long.MaxValue)
    case other => throw new IllegalArgumentException(s"not an integral type: ${other.sql}")
  }

  /** The key as the leaf compares it with values held in `valueType` (the session's cast). */
  def keyFor(key: Attribute, valueType: DataType): Expression =
    if (key.dataType == valueType) key
    else Cast(key, valueType, Option(SQLConf.get.sessionLocalTimeZone))

  /** `e` (of a comparison type) in the form whose bytes are equal exactly when Spark's `=` says the
   * values are: floats with -0.0 and NaN normalised (as a join's keys are), strings of a non-binary
   * collation as their collation key. Value sets hold and probe this form. */
  def canonical(e: Expression): Expression = e.dataType match {
    case FloatType | DoubleType => NormalizeNaNAndZero(e)
    case _: StringType if !Preconditions.binaryStable(e.dataType) => SparkShims.collationKey(e)
    case _ => e
  }

  /** The type both sides of `k = v` are cast to by the session's analyzer; None when it refuses. */
  private def comparisonType(spark: SparkSession, k: DataType, v: DataType): Option[DataType] = {
    val (ka, va) = (AttributeReference("k", k)(), AttributeReference("v", v)())
    val probe = Project(Seq(Alias(EqualTo(ka, va), "eq")()), LocalRelation(ka, va))
    try SieveDatasets.ofRows(spark, probe).queryExecution.analyzed.expressions.collectFirst {
      case Alias(c: BinaryComparison, _) => c.left.dataType
    } catch { case _: AnalysisException => None }
  }
}
