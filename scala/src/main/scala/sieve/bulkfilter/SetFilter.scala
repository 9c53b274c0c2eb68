package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.DataType

/**
 * One value set of a [[SetFilter]]: the values of `branches` (each a source of the filter: its column 0,
 * of type `valueType`, NULLs dropped), each value with the mask of the leaves holding it (`words` longs;
 * bit i is the column's i-th leaf). `labels`: the leaves, for explain.
 */
final case class ValueSetSpec(column: String, valueType: DataType, words: Int, branches: Seq[SetBranch],
    labels: Seq[String])

/** A source read into a value set: every row with the same mask, or (a tagged read of several text
 * files, column 1 naming each row's file) the mask of the file's leaves. */
final case class SetBranch(source: Int, mask: Seq[Long], byFile: Map[String, Seq[Long]])

/**
 * Keep the rows of `child` for which `condition` holds, its value sets built at run time from `sources`
 * (set i from the branches of `sets(i)`) and `textFiles` (read directly, [[TextValueFiles]]), as
 * [[SetFilterExec]] does: one filter, no joins. What
 * [[LowerBulkFilters]] makes of a bulk filter whose value sources fit `spark.sieve.bulkFilter.maxSetBytes`.
 * `labels` name the tree's leaves, for explain. Sources are referenced by position (column 0 the value, 1 the file), not by attribute: the optimizer
 * may rename their columns.
 */
case class SetFilter(condition: TreeCondition, sets: Seq[ValueSetSpec], textFiles: Seq[TextValueFile],
    labels: Seq[String], child: LogicalPlan, sources: Seq[LogicalPlan]) extends LogicalPlan {
  override def children: Seq[LogicalPlan] = child +: sources
  override def output: Seq[Attribute] = child.output
  override def maxRows: Option[Long] = child.maxRows
  // the sources' columns are all used: without them, column pruning would empty the sources
  override lazy val references: AttributeSet = AttributeSet(condition.references ++ sources.flatMap(_.output))

  override def simpleString(maxFields: Int): String =
    s"SetFilter $condition on ${sets.map(s => s"${s.column} (${s.labels.size} leaves)").mkString(", ")}"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[LogicalPlan]): SetFilter =
    copy(child = newChildren.head, sources = newChildren.tail)
}
