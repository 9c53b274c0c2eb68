package sieve.bulkfilter

import org.apache.spark.sql.{AnalysisException, SieveDatasets, SparkSession, SparkShims}
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, BinaryComparison, Cast,
  EqualTo, Expression}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, Project}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, DoubleType, FloatType, StringType}

import sieve.plan.Preconditions

import sieve.errors.SieveColumnException

/**
 * How a leaf compares its key column with its values: as Spark's own `key = value` would, so that
 * include is EXISTS and exclude NOT EXISTS whatever the values' type.
 *  - strings are parsed as the key's type (a string key takes the values in its own collation);
 *  - any other type is compared in the type Spark's analyzer chooses for `=`: the key's own type when
 *    the values widen to it (INT values for a BIGINT key), else the wider type, into which the key is
 *    cast as well (an INT key against DOUBLE values, a DATE key against TIMESTAMP values). A key cast
 *    that could fail (a string key against numbers) is refused at `apply()`.
 */
object ValueComparison {
  def isString(t: DataType): Boolean = t.isInstanceOf[StringType]

  /** The type the values of `source` (of type `values`) are given for comparison with `key`. */
  def valueType(spark: SparkSession, key: Attribute, values: DataType, source: String): DataType =
    if (values == key.dataType || isString(values)) key.dataType
    else {
      val wider = comparisonType(spark, key.dataType, values).getOrElse(throw new SieveColumnException(key.name,
        s"its type ${key.dataType.sql} cannot be compared with the ${values.sql} values of $source"))
      if (wider != key.dataType && !Cast.canUpCast(key.dataType, wider)) {
        throw new SieveColumnException(key.name, s"comparing it with the ${values.sql} values of $source would " +
          s"cast every ${key.dataType.sql} key to ${wider.sql}, which can fail; give values of type ${key.dataType.sql}")
      }
      wider
    }

  /** The key as the leaf compares it with values of `valueType`. */
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
