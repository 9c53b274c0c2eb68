package sieve.bulkfilter

/**
 * The seed's cost model (seeds/000): a leaf costs 0.1 (a join keeps ~10% of its input),
 * AND = product of its children, OR = 10 x their sum. Each node's children are sorted ascending,
 * bottom-up; `sortBy` is stable, so ties keep the user's order.
 */
object SeedCostModel extends CostModel {
  val LeafCost = 0.1

  def cost[L](tree: FilterTree[L]): Double = costWith(tree)(_ => LeafCost)

  /** The seed's combination rules over leaves priced by `leafCost`. */
  def costWith[L](tree: FilterTree[L])(leafCost: L => Double): Double = tree match {
    case Leaf(l) => leafCost(l)
    case AllOf(cs) => cs.map(costWith(_)(leafCost)).product
    case AnyOf(cs) => 10 * cs.map(costWith(_)(leafCost)).sum
  }

  def name: String = "seed"

  def reorder(tree: FilterTree[Int]): FilterTree[Int] = reorderAny(tree)

  def reorderAny[L](tree: FilterTree[L]): FilterTree[L] = reorderWith(tree)(_ => LeafCost)

  /** Each level sorted ascending by `costWith(leafCost)`, bottom-up, ties in written order. */
  def reorderWith[L](tree: FilterTree[L])(leafCost: L => Double): FilterTree[L] = tree match {
    case leaf: Leaf[L] => leaf
    case n: Node[L] =>
      n.withChildren(n.children.map(reorderWith(_)(leafCost)).sortBy(costWith(_)(leafCost)))
  }

  def render(tree: FilterTree[Int], labels: Seq[String]): String = renderWithCosts(tree, labels)

  /** The tree's text with each node's cost, for explain. */
  def renderWithCosts[L](tree: FilterTree[L], show: L => String): String = tree match {
    case Leaf(l) => s"${show(l)}[${fmt(cost(tree))}]"
    case n: Node[L] =>
      n.children.map(renderWithCosts(_, show)).mkString("(", s" ${n.opName} ", s")[${fmt(cost(tree))}]")
  }

  private def fmt(d: Double): String = if (d >= 0.01 && d < 1e6) f"$d%.3g" else f"$d%.2e"
}
