package sieve.ordering

/**
 * The seed's cost model (seeds/000): a leaf costs 0.1 (a join keeps ~10% of its input),
 * AND = product of its children, OR = 10 x their sum. Each node's children are sorted ascending,
 * bottom-up; `sortBy` is stable, so ties keep the user's order.
 */
class SeedCostModel(leafCost: Int => Double) extends CostModel {
  def name: String = "seed"

  def orderLevel(node: Node[Int], children: Seq[FilterTree[Int]]): Seq[FilterTree[Int]] =
    children.sortBy(SeedCostModel.costWith(_)(leafCost))

  def render(tree: FilterTree[Int], labels: Seq[String]): String =
    SeedCostModel.renderWithCosts(tree, labels)
}

/** The seed's model with every leaf at [[SeedCostModel.LeafCost]]. */
object SeedCostModel extends SeedCostModel(_ => 0.1) {
  val LeafCost = 0.1

  def cost[L](tree: FilterTree[L]): Double = costWith(tree)(_ => LeafCost)

  /** The seed's combination rules over leaves priced by `leafCost`. */
  def costWith[L](tree: FilterTree[L])(leafCost: L => Double): Double = tree match {
    case Leaf(l) => leafCost(l)
    case AllOf(cs) => cs.map(costWith(_)(leafCost)).product
    case AnyOf(cs) => 10 * cs.map(costWith(_)(leafCost)).sum
  }

  def reorderAny[L](tree: FilterTree[L]): FilterTree[L] = reorderWith(tree)(_ => LeafCost)

  /** Each level sorted ascending by `costWith(leafCost)`, bottom-up, ties in written order. */
  def reorderWith[L](tree: FilterTree[L])(leafCost: L => Double): FilterTree[L] = tree match {
    case leaf: Leaf[L] => leaf
    case n: Node[L] =>
      n.withChildren(n.children.map(reorderWith(_)(leafCost)).sortBy(costWith(_)(leafCost)))
  }

  /** The tree's text with each node's cost, for explain. */
  def renderWithCosts[L](tree: FilterTree[L], show: L => String): String = tree match {
    case Leaf(l) => s"${show(l)}[${fmt(cost(tree))}]"
    case n: Node[L] =>
      n.children.map(renderWithCosts(_, show)).mkString("(", s" ${n.opName} ", s")[${fmt(cost(tree))}]")
  }

  private def fmt(d: Double): String = if (d >= 0.01 && d < 1e6) f"$d%.3g" else f"$d%.2e"
}
