package sieve.bulkfilter

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenFallback, GeneratePredicate}
import org.apache.spark.sql.types.{DataType, Decimal, DecimalType, IntegerType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import sieve.valueset.{ValueKey, ValueSet, ValueSetBuilder}
import sieve.ordering._

/** The bulk-filter tree's generated code (inline, and through its program for large trees) answers as
 * its interpreted form does, on random trees whose leaves are mask bits (NULL masks included), value-set
 * probes of long, string and decimal keys (NULL keys included) and undecided leaves. */
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

  // longs dense (an id array), ints sparse (a hash set)
  private val keyTypes: Seq[DataType] = Seq(LongType, StringType, DecimalType(30, 2), IntegerType)
  private def keyValue(t: DataType, v: Int): Any = t match {
    case LongType => v.toLong
    case IntegerType => v * 50000000
    case StringType => UTF8String.fromString(s"v$v")
    case d: DecimalType => Decimal(BigDecimal(v) / 4, d.precision, d.scale)
    case other => fail(s"no values for $other")
  }

  /** One value set per key type, over the values 0..19 (each added `copies` times), each value with random
   * bits of its set's `perSet(c)` leaves (or left out when it gets none). */
  private def randomSets(rnd: Random, perSet: Seq[Int], copies: Int): Array[ValueSet] = keyTypes.indices.map { c =>
    val words = math.max(perSet(c) - 1, 0) / 64 + 1
    val t = keyTypes(c)
    val builder = new ValueSetBuilder(ValueKey.of(t) == ValueKey.Integral, words)
    val project = UnsafeProjection.create(Seq(BoundReference(0, t, nullable = false)))
    for (v <- 0 until 20; _ <- 0 until copies) {
      val mask = Array.fill(words)(0L)
      (0 until perSet(c)).foreach(b => if (rnd.nextDouble() < 0.3) mask(b / 64) |= 1L << (b % 64))
      if (mask.exists(_ != 0)) ValueKey.adder(t)(project(InternalRow(keyValue(t, v))), builder, mask)
    }
    builder.result()
  }.toArray

  private def runtime(built: Int => ValueSet, adapt: Boolean): TreeRuntime = new TreeRuntime {
    def apply(c: Int): ValueSet = built(c)
    def adaptive: Boolean = adapt
    def stats: Option[TreeStats] = None
  }

  Seq(("inline", 40, false), ("evaluator", TreeCondition.InlineLeaves + 60, false), ("adaptive", 40, true),
      ("adaptive", TreeCondition.InlineLeaves + 60, true)).foreach { case (name, n, adapt) =>
    test(s"generated code equals eval: $name ($n leaves)") {
      val rnd = new Random(n)
      val groups = (n + 63) / 64
      val maskChildren: Seq[Expression] = (0 until groups).map(i => BoundReference(i, LongType, nullable = true))
      val keyChildren: Seq[Expression] = keyTypes.indices.map(c => BoundReference(groups + c, keyTypes(c), nullable = true))
      var (trues, falses) = (0, 0)
      (0 until 5).foreach { round =>
        // each leaf: a mask bit, a bit of one set's masks, or undecided
        val perSet = Array.fill(keyTypes.size)(0)
        val tests: Seq[LeafTest] = (0 until n).map { l =>
          val r = rnd.nextDouble()
          if (r < 0.4) MaskBit(l / 64, l % 64)
          else if (r < 0.9) { val c = rnd.nextInt(keyTypes.size); perSet(c) += 1; SetBit(c, perSet(c) - 1) }
          else Undecided
        }
        val built = randomSets(rnd, perSet.toSeq, copies = 2)
        val condition = TreeCondition(randomTree(rnd, n), tests, includes = Seq.fill(n)(rnd.nextBoolean()),
          maskChildren ++ keyChildren, groups, runtime(built, adapt))
        assert(!condition.isInstanceOf[CodegenFallback])
        val generated = GeneratePredicate.generate(condition)
        generated.initialize(0)
        (0 until (if (adapt) 10000 else 2000)).foreach { _ => // adaptive: past a few re-sorts
          val masks = (0 until groups).map { _ =>
            if (rnd.nextDouble() < 0.1) null
            else { var m = 0L; (0 until 64).foreach(b => if (rnd.nextDouble() < 0.7) m |= 1L << b); m }
          }
          val keys = keyTypes.map(t => if (rnd.nextDouble() < 0.1) null else keyValue(t, rnd.nextInt(25)))
          val row = InternalRow.fromSeq(masks ++ keys)
          val expected = condition.eval(row).asInstanceOf[Boolean]
          assert(generated.eval(row) === expected, s"round $round, row $row")
          if (expected) trues += 1 else falses += 1
        }
      }
      assert(trues > 0 && falses > 0, "both answers must be exercised")
    }
  }

  test("adaptive order: an AND's child that rejects every row moves first, and the other is seldom run") {
    // leaf 0 (bit 0, always set) passes every row; leaf 1 (bit 1, never set) rejects every row
    val tree = AllOf(Seq(Leaf(0), Leaf(1)))
    val condition = TreeCondition(tree, Seq(MaskBit(0, 0), MaskBit(0, 1)), Seq(true, true),
      Seq(BoundReference(0, LongType, nullable = true)), maskInputs = 1, runtime(_ => null, adapt = true))
    val evaluator = condition.newEvaluator()
    val rows = 100000
    (0 until rows).foreach(_ => assert(!evaluator.test(Array(1L))))
    val totals = evaluator.totals()
    val nodes = condition.plan.size // root, leaf 0, leaf 1
    def evals(n: Int) = totals(n)
    assert(evals(1) <= TreeEvaluator.Sample, s"the passing leaf ran ${evals(1)} times") // only until the first re-sort
    assert(evals(2) >= rows / TreeEvaluator.Period * TreeEvaluator.Sample) // every sample is counted
    assert(totals(nodes + 1) === evals(1) && totals(nodes + 2) === 0) // passes as counted
    // without adaptation the written order stays: both leaves on every row
    val fixed = condition.withRuntime(runtime(_ => null, adapt = false)).newEvaluator()
    (0 until 1000).foreach(_ => assert(!fixed.test(Array(1L))))
  }

  test("memoised answers (a large tree of value sets only) equal the walk of the tree") {
    val rnd = new Random(3)
    val n = TreeCondition.InlineLeaves + 200
    val perSet = Array.fill(keyTypes.size)(0)
    val tests = (0 until n).map { _ => val c = rnd.nextInt(keyTypes.size); perSet(c) += 1; SetBit(c, perSet(c) - 1) }
    val built = randomSets(rnd, perSet.toSeq, copies = 1)
    val keys: Seq[Expression] = keyTypes.indices.map(c => BoundReference(c, keyTypes(c), nullable = true))
    Seq(false, true).foreach { adapt =>
      val condition = TreeCondition(randomTree(rnd, n), tests, Seq.fill(n)(rnd.nextBoolean()), keys, 0,
        runtime(built, adapt))
      val generated = GeneratePredicate.generate(condition) // memoised
      generated.initialize(0)
      val walk = condition.evaluator(memo = false)
      val asRow = keyTypes.map(t =>
        if (ValueKey.of(t) == ValueKey.Row) UnsafeProjection.create(Seq(BoundReference(0, t, nullable = true))) else null)
      var (trues, falses) = (0, 0)
      (0 until 50000).foreach { _ =>
        val values = keyTypes.map(t => if (rnd.nextDouble() < 0.1) null else keyValue(t, rnd.nextInt(25)))
        // the evaluator takes a key of a row-held type as its one-column UnsafeRow
        keyTypes.indices.foreach(c => walk.setValue(c,
          if (values(c) == null || asRow(c) == null) values(c) else asRow(c)(InternalRow(values(c)))))
        val expected = walk.test(Array.emptyLongArray)
        assert(generated.eval(InternalRow.fromSeq(values)) === expected)
        if (expected) trues += 1 else falses += 1
      }
      assert(trues > 0 && falses > 0)
    }
  }
}
