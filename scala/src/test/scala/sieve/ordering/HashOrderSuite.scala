package sieve.ordering

import org.scalatest.funsuite.AnyFunSuite

class HashOrderSuite extends AnyFunSuite {
  private val names = IndexedSeq("a", "b", "c", "d", "e")
  private val model = new HashOrder(i => names(i).hashCode)
  // the leaves of `t` (indexes into `names` as written) after ordering, as names
  private def order(t: FilterTree[Int], pinned: FilterTree[Int] => Boolean = _ => false): FilterTree[String] =
    model.reorder(t, pinned).map(names)

  test("each level ordered by its children's content, whatever order they were written in") {
    val written = AllOf(Seq(Leaf(4), AnyOf(Seq(Leaf(3), Leaf(1))), Leaf(0)))
    val shuffled = AllOf(Seq(Leaf(0), AnyOf(Seq(Leaf(1), Leaf(3))), Leaf(4)))
    assert(order(written).render(identity) === "(a and (b or d) and e)")
    assert(order(shuffled) === order(written))
  }

  test("a second application keeps the order (an optimizer batch reaches its fixed point)") {
    val once = model.reorder(AllOf(Seq(Leaf(2), Leaf(0), Leaf(1))))
    assert(model.reorder(once) === once)
  }

  test("a pinned child keeps its place and nothing moves past it") {
    val t = AllOf(Seq(Leaf(4), Leaf(3), Leaf(2), Leaf(1), Leaf(0)))
    assert(order(t, _ == Leaf(2)).render(identity) === "(d and e and c and a and b)")
  }
}
