package sieve.ordering

/** Orders every level of a resolved tree (leaves are indexes into a [[BulkFilter]]'s leaves, or into
 * an ordinary filter's predicates). */
trait CostModel {
  def name: String

  /** One AND/OR level: `children` (each already in order inside) in this model's order. Stable:
   * ties keep their order. */
  def orderLevel(node: Node[Int], children: Seq[FilterTree[Int]]): Seq[FilterTree[Int]]

  /** Every level in this model's order, bottom-up. A child for which `pinned` holds (one that must
   * not move, nor have anything moved past it: see [[sieve.plan.Preconditions]]) is left as it is, in its
   * place; only the children between two pinned ones are ordered, among themselves. */
  final def reorder(tree: FilterTree[Int], pinned: FilterTree[Int] => Boolean = _ => false): FilterTree[Int] =
    tree match {
      case leaf: Leaf[Int] => leaf
      case n: Node[Int] =>
        val children = n.children.map(c => if (pinned(c)) c else reorder(c, pinned))
        val runs = children.foldLeft(Vector.empty[Vector[FilterTree[Int]]]) { (acc, c) =>
          if (pinned(c) || acc.isEmpty || pinned(acc.last.head)) acc :+ Vector(c) else acc.init :+ (acc.last :+ c)
        }
        n.withChildren(runs.flatMap(run => if (run.size > 1) orderLevel(n, run) else run))
    }

  /** The tree's text with each node's estimate, for explain. */
  def render(tree: FilterTree[Int], labels: Seq[String]): String
}

/** Reordering off: the tree runs as written (seed costs shown for reference). */
object WrittenOrder extends CostModel {
  def name: String = "none (reordering off: written order)"
  def orderLevel(node: Node[Int], children: Seq[FilterTree[Int]]): Seq[FilterTree[Int]] = children
  def render(tree: FilterTree[Int], labels: Seq[String]): String = SeedCostModel.render(tree, labels)
}

/** Testing only (`spark.sieve.testing.placeEveryFilter`): each level ordered by a hash of its children's content,
 * `hashOf` a leaf's, an order no cost model would choose, so that predicates move wherever they may, and one
 * that a second application keeps (an optimizer batch reaches its fixed point). */
final class HashOrder(hashOf: Int => Int) extends CostModel {
  def name: String = "hash order (testing: spark.sieve.testing.placeEveryFilter)"
  def orderLevel(node: Node[Int], children: Seq[FilterTree[Int]]): Seq[FilterTree[Int]] =
    children.sortBy(_.leaves.map(hashOf).min)
  def render(tree: FilterTree[Int], labels: Seq[String]): String = SeedCostModel.render(tree, labels)
}
