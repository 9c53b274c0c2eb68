package sieve.bulkfilter

import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf

/** The order a [[BulkFilter]] runs in, shared by [[LowerBulkFilters]] and explain. */
object BulkFilterOrder {
  def reorderEnabled(conf: SQLConf): Boolean =
    SieveConf.enabled(conf) && SieveConf.BULK_FILTER_ENABLED.get(conf)

  def chosenTree[L](tree: FilterTree[L], conf: SQLConf): FilterTree[L] =
    if (reorderEnabled(conf)) SeedCostModel.reorder(tree) else tree

  /** Leaves grouped by key column, the columns in the order their first leaf appears in `tree`. */
  def columnsInOrder(bf: BulkFilter, tree: FilterTree[Int]): Seq[Seq[Int]] = {
    val leaves = tree.leaves
    val byColumn = leaves.groupBy(l => bf.keys(l).exprId)
    leaves.map(l => bf.keys(l).exprId).distinct.map(byColumn)
  }

  /** What `spark_sieve.explain` prints for one node: the tree as written and as run, with costs. */
  def explain(bf: BulkFilter, conf: SQLConf): String = {
    val chosen = chosenTree(bf.tree, conf)
    val joins = columnsInOrder(bf, chosen).map(ls => s"${bf.keys(ls.head).name} (${ls.size} leaves)")
    Seq(
      s"BulkFilter: ${bf.tree.leaves.size} leaves over ${bf.sources.size} value sources",
      s"  cost model: ${if (reorderEnabled(conf)) "seed" else "none (reordering off: written order)"}",
      s"  as written: ${SeedCostModel.renderWithCosts(bf.tree, bf.labels)}",
      s"  as run:     ${SeedCostModel.renderWithCosts(chosen, bf.labels)}",
      s"  joins:      ${joins.mkString(" -> ")}"
    ).mkString("\n")
  }
}
