package sieve.bulkfilter

/** Orders every level of a resolved tree (leaves are indexes into a [[BulkFilter]]'s leaves). */
trait CostModel {
  def name: String
  def reorder(tree: FilterTree[Int]): FilterTree[Int]
  /** The tree's text with each node's estimate, for explain. */
  def render(tree: FilterTree[Int], labels: Seq[String]): String
}

/** Reordering off: the tree runs as written (seed costs shown for reference). */
object WrittenOrder extends CostModel {
  def name: String = "none (reordering off: written order)"
  def reorder(tree: FilterTree[Int]): FilterTree[Int] = tree
  def render(tree: FilterTree[Int], labels: Seq[String]): String = SeedCostModel.render(tree, labels)
}
