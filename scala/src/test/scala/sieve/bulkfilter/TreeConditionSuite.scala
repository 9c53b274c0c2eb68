package sieve.bulkfilter

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenFallback, GeneratePredicate}
import org.apache.spark.sql.types.LongType
import org.scalatest.funsuite.AnyFunSuite

import sieve.ordering._

/** The bulk-filter tree's generated code (inline, and through its program for large trees) answers as
 * its interpreted form does, on random trees and masks, NULL masks and unjoined leaves included. */
class TreeConditionSuite extends AnyFunSuite {
  private def randomTree(rnd: Random, leaves: Int): FilterTree[Int] = {
    def build(ls: Seq[Int], and: Boolean): FilterTree[Int] =
      if (ls.size == 1) Leaf(ls.head)
      else {
        val parts = rnd.nextInt(3) + 2
        val groups = ls.grouped(math.max(1, (ls.size + parts - 1) / parts)).toSeq
        val kids = groups.map(g => build(g, !and))
        if (kids.size == 1) kids.head else if (and) AllOf(kids) else AnyOf(kids)
      }
    build(0 until leaves, rnd.nextBoolean())
  }

  Seq(("inline", 40), ("program", TreeCondition.InlineLeaves + 60)).foreach { case (name, n) =>
    test(s"generated code equals eval: $name ($n leaves)") {
      val rnd = new Random(n)
      val groups = (n + 63) / 64
      val children: Seq[Expression] = (0 until groups).map(i => BoundReference(i, LongType, nullable = true))
      var (trues, falses) = (0, 0)
      (0 until 5).foreach { round =>
        val condition = TreeCondition(randomTree(rnd, n), maskOf = (0 until n).map(_ / 64), bits = (0 until n).map(_ % 64),
          includes = Seq.fill(n)(rnd.nextBoolean()), known = Seq.fill(n)(rnd.nextDouble() < 0.8), children)
        assert(!condition.isInstanceOf[CodegenFallback])
        val generated = GeneratePredicate.generate(condition)
        generated.initialize(0)
        (0 until 2000).foreach { _ =>
          val row = InternalRow.fromSeq((0 until groups).map { _ =>
            if (rnd.nextDouble() < 0.1) null
            else { var m = 0L; (0 until 64).foreach(b => if (rnd.nextDouble() < 0.7) m |= 1L << b); m }
          })
          val expected = condition.eval(row).asInstanceOf[Boolean]
          assert(generated.eval(row) === expected, s"round $round, row $row")
          if (expected) trues += 1 else falses += 1
        }
      }
      assert(trues > 0 && falses > 0, "both answers must be exercised")
    }
  }
}
