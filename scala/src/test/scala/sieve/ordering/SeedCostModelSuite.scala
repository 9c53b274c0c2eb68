package sieve.ordering

import org.scalatest.funsuite.AnyFunSuite

class SeedCostModelSuite extends AnyFunSuite {
  private def l(name: String): FilterTree[String] = Leaf(name)
  private def and(cs: FilterTree[String]*): FilterTree[String] = AllOf(cs)
  private def or(cs: FilterTree[String]*): FilterTree[String] = AnyOf(cs)
  private def order(t: FilterTree[String]): String = SeedCostModel.reorderAny(t).render(identity)

  test("costs: leaf 0.1, AND = product, OR = 10 x sum (the seed's illustration)") {
    assert(SeedCostModel.cost(l("a")) === 0.1)
    assert(math.abs(SeedCostModel.cost(or(l("b"), l("c"))) - 2.0) < 1e-12)
    assert(math.abs(SeedCostModel.cost(and(l("d"), l("e"))) - 0.01) < 1e-12)
  }

  test("(a or b) and c and (d or f) becomes c and (a or b) and (d or f)") {
    assert(order(and(or(l("a"), l("b")), l("c"), or(l("d"), l("f")))) === "(c and (a or b) and (d or f))")
  }

  test("(D) or ((C) and (A and B)) becomes (((A and B) and C) or D)") {
    assert(order(or(l("D"), and(l("C"), and(l("A"), l("B"))))) === "(((A and B) and C) or D)")
  }

  test("ties keep the written order; reordering is idempotent") {
    val t = and(l("x"), l("y"), l("z"), or(l("p"), l("q")))
    assert(order(t) === "(x and y and z and (p or q))")
    assert(SeedCostModel.reorderAny(SeedCostModel.reorderAny(t)) === SeedCostModel.reorderAny(t))
  }
}
