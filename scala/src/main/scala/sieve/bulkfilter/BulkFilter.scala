package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * The logical node `tree.apply(df)` puts in a plan: keep the rows of `child` for which `tree` holds.
 * Leaf `i` of `tree` tests `keys(i)` (a column of `child`) against the one-column plan
 * `sources(leafSources(i))`, whose values are already cast to the key's type and hold no NULL.
 * [[LowerBulkFilters]] replaces the node with joins before anything executes it.
 */
case class BulkFilter(
    tree: FilterTree[Int],
    keys: Seq[Attribute],
    leafSources: Seq[Int],
    leafIncludes: Seq[Boolean],
    labels: Seq[String],
    child: LogicalPlan,
    sources: Seq[LogicalPlan]) extends LogicalPlan {

  override def children: Seq[LogicalPlan] = child +: sources
  override def output: Seq[Attribute] = child.output
  override def maxRows: Option[Long] = child.maxRows

  def valueOf(leaf: Int): Attribute = sources(leafSources(leaf)).output.head

  // The value columns are used too: without them, column pruning would empty the sources.
  override lazy val references: AttributeSet = AttributeSet(keys ++ sources.map(_.output.head))

  def writtenTree: String = tree.render(labels)

  override def simpleString(maxFields: Int): String =
    s"BulkFilter ${tree.leaves.size} leaves on ${keys.map(_.name).distinct.mkString(", ")}: $writtenTree"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[LogicalPlan]): BulkFilter =
    copy(child = newChildren.head, sources = newChildren.tail)
}
