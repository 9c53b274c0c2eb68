package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

import sieve.ordering._

/**
 * The logical node `tree.apply(df)` puts in a plan: keep the rows of `child` for which `tree` holds.
 * Leaf `i` of `tree` tests `keys(i)` (a column of `child`) against the values of the plan
 * `sources(leafSources(i))` — output `(value, file)`, values already in the type `comparisons(s)` holds
 * them in (Spark's `=` decides it: [[ValueComparison]]), no NULL —
 * restricted to the rows whose `file` is in `leafFiles(i)` (Nil: all rows; text files of one column
 * share one scan, so a leaf owns only its own files of it). `textFiles(s)`: the files of source `s` when
 * it is a read of text files (a value set reads them itself), else Nil.
 * [[LowerBulkFilters]] replaces the node with joins before anything executes it.
 */
case class BulkFilter(
    tree: FilterTree[Int],
    keys: Seq[Attribute],
    leafSources: Seq[Int],
    leafFiles: Seq[Seq[String]],
    textFiles: Seq[Seq[(String, Long)]],
    leafBytes: Seq[Long],
    leafIncludes: Seq[Boolean],
    labels: Seq[String],
    comparisons: Seq[ValueComparison.Comparison],
    child: LogicalPlan,
    sources: Seq[LogicalPlan]) extends LogicalPlan {

  override def children: Seq[LogicalPlan] = child +: sources
  override def output: Seq[Attribute] = child.output
  override def maxRows: Option[Long] = child.maxRows

  /** For the stats cost model; computed on first use (the input's sample is shared by copies). */
  @transient lazy val estimates: Seq[LeafEstimate] = LeafStatistics.estimate(this)

  def valueOf(source: Int): Attribute = sources(source).output.head
  def fileOf(source: Int): Attribute = sources(source).output(1)

  /** Leaf `i`'s key as it is compared with its values (cast when they are held in another type). */
  def compareKey(leaf: Int): Expression = ValueComparison.keyFor(keys(leaf), valueOf(leafSources(leaf)).dataType)

  // The sources' columns are used too: without them, column pruning would empty the sources.
  override lazy val references: AttributeSet = AttributeSet(keys ++ sources.flatMap(_.output))

  def writtenTree: String = tree.render(labels)

  override def simpleString(maxFields: Int): String =
    s"BulkFilter ${tree.leaves.size} leaves on ${keys.map(_.name).distinct.mkString(", ")}: $writtenTree"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[LogicalPlan]): BulkFilter =
    copy(child = newChildren.head, sources = newChildren.tail)
}
