package sieve.api

import scala.annotation.nowarn

import org.apache.spark.sql.{SparkSession, SparkShims}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, FunctionTableSubqueryArgumentExpression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StringType

import sieve.bulkfilter.{ApplyBulkFilter, FilterTreeJson}
import sieve.errors.SieveTreeException

/**
 * `SELECT * FROM sieve_bulk_filter(TABLE(t), '<tree JSON>' [, TABLE(s0), TABLE(s1), ...])`: `tree.apply(df)`
 * for SQL. The JSON is `BulkFilter.to_json`'s; a `{"dataframe": i}` source is the i-th TABLE argument after the
 * JSON. Spark's analyzer calls the builder once the arguments are resolved, so the result is the same
 * BulkFilter node `tree.apply` makes, checked the same way (every mistake a SieveException naming it).
 */
object BulkFilterTableFunction {
  val Name = "sieve_bulk_filter"

  private val Usage =
    s"""$Name(TABLE(input), tree_json [, TABLE(source0), ...]) - the rows of input that the bulk-filter tree keeps.
       |  tree_json: a string literal, BulkFilter.to_json's form; a {"dataframe": i} source is the i-th TABLE
       |  argument after it.""".stripMargin

  // (the short constructor, deprecated: the full one validates fields - group, since, source - a usage text needs none of)
  @nowarn("cat=deprecation")
  val description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    (FunctionIdentifier(Name),
      new ExpressionInfo(getClass.getCanonicalName, null, Name, Usage, ""),
      (args: Seq[Expression]) => build(args))

  def build(args: Seq[Expression]): LogicalPlan = {
    if (args.size < 2) {
      throw new SieveTreeException(Name, s"takes TABLE(input), the tree's JSON and the TABLE sources; got ${args.size} argument(s)")
    }
    val session = SparkSession.active
    val input = SparkShims.ofRows(session, table(args.head, 1))
    val json = args(1) match {
      case e if e.foldable && e.dataType.isInstanceOf[StringType] && e.eval() != null => e.eval().toString
      case e => throw new SieveTreeException(s"$Name argument 2", s"the tree's JSON must be a string literal, not ${e.sql}")
    }
    val frames = args.drop(2).zipWithIndex.map { case (a, i) => SparkShims.ofRows(session, table(a, i + 3)) }
    ApplyBulkFilter(input, FilterTreeJson.parse(json, frames, i => s"TABLE source #$i"))
      .queryExecution.analyzed
  }

  /** The plan of a `TABLE(...)` argument; PARTITION BY / ORDER BY (meant for Python UDTFs) refused. */
  private def table(arg: Expression, position: Int): LogicalPlan = arg match {
    case t: FunctionTableSubqueryArgumentExpression =>
      if (SparkShims.repartitioned(t)) {
        throw new SieveTreeException(s"$Name argument $position", "PARTITION BY / ORDER BY have no meaning here")
      }
      if (t.outerAttrs.nonEmpty) {
        throw new SieveTreeException(s"$Name argument $position", "a TABLE argument may not refer to an outer query")
      }
      t.plan
    case other =>
      throw new SieveTreeException(s"$Name argument $position", s"expected TABLE(<table or query>), not ${other.sql}")
  }
}
