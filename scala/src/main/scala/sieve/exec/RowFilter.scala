package sieve.exec

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, Predicate}
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode
import org.apache.spark.sql.execution.metric.SQLMetric

/** What spark-sieve's filter operators (DynamicFilterExec, SetFilterExec) share: a predicate tested in
 * the generated code of the child's stage, or over rows without it. */
object RowFilter {

  /** The consume code of a filter: count the row in, run `check` (which reads the columns it needs itself;
   * the others are left to the consumer, so a dropped row's are never decoded), skip the row when false,
   * count it out, pass it on. `continue` skips the row, the do-while(false) gives it a loop to leave
   * wherever the producer's code puts this (both as Spark's FilterExec does). */
  def consumeCode(check: ExprCode, rowsIn: Option[String], rowsOut: String, consume: String): String =
    s"""
       |do {
       |  ${rowsIn.map(m => s"$m.add(1);").getOrElse("")}
       |  ${check.code}
       |  if (!${check.value}) continue;
       |  $rowsOut.add(1);
       |  $consume
       |} while(false);
     """.stripMargin

  /** Without whole-stage codegen: the rows of `input` (of `schema`) for which `predicate` holds. */
  def filterRows(input: RDD[InternalRow], predicate: Expression, schema: Seq[Attribute], rowsIn: Option[SQLMetric],
      rowsOut: SQLMetric): RDD[InternalRow] =
    input.mapPartitionsWithIndex(preservesPartitioning = true, f = { (index, rows) =>
      val test = Predicate.create(predicate, schema)
      test.initialize(index)
      rows.filter { row =>
        rowsIn.foreach(_ += 1)
        val keep = test.eval(row)
        if (keep) rowsOut += 1
        keep
      }
    })
}
