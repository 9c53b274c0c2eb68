package sieve.ordering

import org.scalatest.funsuite.AnyFunSuite

class StatsCostModelSuite extends AnyFunSuite {
  /** Leaf i keeps `kept(i)` of the rows (an include of kept(i) x 100 of 100 distinct values). */
  private def model(kept: Double*) = new StatsCostModel(i => LeafEstimate(include = true, kept(i) * 100, 100, 1.0))
  private def order(m: StatsCostModel, t: FilterTree[Int]) = m.reorder(t).render(i => s"L$i")

  test("AND runs the most selective child first, OR the least selective") {
    val m = model(0.9, 0.1, 0.5)
    assert(order(m, AllOf(Seq(Leaf(0), Leaf(1), Leaf(2)))) === "(L1 and L2 and L0)")
    assert(order(m, AnyOf(Seq(Leaf(0), Leaf(1), Leaf(2)))) === "(L0 or L2 or L1)")
  }

  test("per-row cost counts: an equally selective but cheaper child goes first") {
    val m = new StatsCostModel(i => LeafEstimate(include = true, 10, 100, cost = if (i == 0) 5.0 else 1.0))
    assert(order(m, AllOf(Seq(Leaf(0), Leaf(1)))) === "(L1 and L0)")
  }

  test("nested nodes are ranked by their own combined estimates") {
    // (L0 or L1) keeps 0.19 of the rows at cost 1.9 (rank 1.9/0.81 = 2.3); L2 keeps 0.8 (rank 1/0.2 = 5)
    val m = model(0.1, 0.1, 0.8)
    assert(order(m, AllOf(Seq(Leaf(2), AnyOf(Seq(Leaf(0), Leaf(1)))))) === "((L0 or L1) and L2)")
    // ... but L2 keeping 0.5 (rank 2) beats the OR: two probes to drop 81% lose to one that drops 50%
    assert(order(model(0.1, 0.1, 0.5), AllOf(Seq(AnyOf(Seq(Leaf(0), Leaf(1))), Leaf(2)))) === "(L2 and (L0 or L1))")
  }

  test("exclude keeps what include would not; a child that can decide nothing goes last") {
    val m = new StatsCostModel(i => LeafEstimate(include = i != 0, if (i == 0) 90 else 100, 100, 1.0))
    // exclude of 90 of 100 values keeps 0.1; include of all 100 keeps everything (rank: never first)
    assert(order(m, AllOf(Seq(Leaf(1), Leaf(0)))) === "(L0 and L1)")
  }
}
