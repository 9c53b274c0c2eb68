package sieve.ordering

/**
 * Orders by estimated selectivity `s` (the fraction of rows a node keeps) and per-row cost `c`:
 * AND children ascending by c / (1 - s), OR children ascending by c / s — the optimal order for
 * independent predicates (what Impala does statically, Velox and Trino adaptively). A node's own
 * `s` and `c` follow from its ordered children: under AND a child only sees what the ones before it
 * kept, under OR what they did not.
 */
class StatsCostModel(leaf: Int => LeafEstimate) extends CostModel {
  def name: String = "stats"

  private case class Est(s: Double, c: Double)

  private def estimate(tree: FilterTree[Int]): (FilterTree[Int], Est) = tree match {
    case Leaf(l) =>
      val e = leaf(l)
      (tree, Est(e.selectivity, e.cost))
    case AllOf(cs) =>
      val ordered = cs.map(estimate).sortBy { case (_, e) => rank(e.c, 1 - e.s) }
      val (s, c) = ordered.foldLeft((1.0, 0.0)) { case ((pass, cost), (_, e)) => (pass * e.s, cost + pass * e.c) }
      (AllOf(ordered.map(_._1)), Est(s, c))
    case AnyOf(cs) =>
      val ordered = cs.map(estimate).sortBy { case (_, e) => rank(e.c, e.s) }
      val (fail, c) = ordered.foldLeft((1.0, 0.0)) { case ((left, cost), (_, e)) => (left * (1 - e.s), cost + left * e.c) }
      (AnyOf(ordered.map(_._1)), Est(1 - fail, c))
  }

  /** c / gain, where a child that can decide nothing (gain 0) goes last. */
  private def rank(c: Double, gain: Double): Double = if (gain <= 0) Double.MaxValue else c / gain

  def orderLevel(node: Node[Int], children: Seq[FilterTree[Int]]): Seq[FilterTree[Int]] = {
    val est = children.map(c => c -> estimate(c)._2)
    (node match {
      case _: AllOf[Int] => est.sortBy { case (_, e) => rank(e.c, 1 - e.s) }
      case _: AnyOf[Int] => est.sortBy { case (_, e) => rank(e.c, e.s) }
    }).map(_._1)
  }

  def render(tree: FilterTree[Int], labels: Seq[String]): String = {
    def go(t: FilterTree[Int]): String = {
      val e = estimate(t)._2
      val note = f"[s=${e.s}%.3g c=${e.c}%.3g]"
      t match {
        case Leaf(l) => labels(l) + note
        case n: Node[Int] => n.children.map(go).mkString("(", s" ${n.opName} ", ")") + note
      }
    }
    go(tree)
  }
}

/** What the stats model knows of one leaf: how many distinct values it holds, of how many the key
 * column has, and what evaluating it costs per input row. */
final case class LeafEstimate(include: Boolean, values: Double, columnDistinct: Double, cost: Double) {
  private def hitRate: Double = math.min(1.0, values / math.max(columnDistinct, 1.0))
  def selectivity: Double = if (include) hitRate else 1.0 - hitRate
}

object LeafEstimate {
  /** A leaf known only by the fraction of rows it keeps and its cost. */
  def of(selectivity: Double, cost: Double): LeafEstimate = LeafEstimate(include = true, selectivity * 1e6, 1e6, cost)
}
