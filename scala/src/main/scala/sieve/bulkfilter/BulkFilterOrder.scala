package sieve.bulkfilter

import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.ordering._

/** The order a [[BulkFilter]] runs in, shared by [[LowerBulkFilters]] and explain. */
object BulkFilterOrder {
  def reorderEnabled(conf: SQLConf): Boolean =
    SieveConf.enabled(conf) && SieveConf.BULK_FILTER_ENABLED.get(conf)

  def model(bf: BulkFilter, conf: SQLConf): CostModel =
    if (!reorderEnabled(conf)) WrittenOrder
    else SieveConf.BULK_FILTER_COST_MODEL.get(conf) match {
      case "stats" => new StatsCostModel(bf.estimates)
      case _ => SeedCostModel
    }

  def chosenTree(bf: BulkFilter, conf: SQLConf): FilterTree[Int] = model(bf, conf).reorder(bf.tree)

  /** Leaves grouped by key column (and the type it is compared in: one value table per type), the
   * columns in the order their first leaf appears in `tree`. */
  def columnsInOrder(bf: BulkFilter, tree: FilterTree[Int]): Seq[Seq[Int]] = {
    val leaves = tree.leaves
    def column(l: Int) = (bf.keys(l).exprId, bf.valueOf(bf.leafSources(l)).dataType)
    val byColumn = leaves.groupBy(column)
    leaves.map(column).distinct.map(byColumn)
  }

  /** What `spark_sieve.explain` prints for one node: the tree as written and as run, with costs. */
  def explain(bf: BulkFilter, conf: SQLConf): String = {
    val costs = model(bf, conf)
    val chosen = costs.reorder(bf.tree)
    val joins = columnsInOrder(bf, chosen).map(ls => s"${bf.keys(ls.head).name} (${ls.size} leaves)")
    Seq(
      s"BulkFilter: ${bf.tree.leaves.size} leaves over ${bf.sources.size} value sources",
      s"  cost model: ${costs.name}",
      s"  as written: ${costs.render(bf.tree, bf.labels)}",
      s"  as run:     ${costs.render(chosen, bf.labels)}",
      s"  joins:      ${joins.mkString(" -> ")}"
    ).mkString("\n")
  }
}
