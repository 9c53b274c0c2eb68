package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, BitOrAgg, Complete}
import org.apache.spark.sql.catalyst.plans.LeftOuter
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.LongType

/**
 * Replaces each [[BulkFilter]] node with Catalyst's own joins, so the plan does not grow with the
 * number of leaves: all value sources of one key column become one table `value -> bitmasks` (bit i
 * set when leaf i holds the value), joined once (left outer: a key with no match gets empty masks),
 * and the tree becomes one boolean expression over mask bits. The per-column joins run in cost order;
 * after each, a filter drops the rows the tree already rejects whatever the columns not yet joined
 * say (the tree has no negation above its leaves, so "could still be true" is the tree with every
 * unknown leaf set to true) — the seed's "AND passes its filtered data on", generalised to OR.
 * Input rows are never duplicated (values are unique per table) nor de-duplicated (no DISTINCT).
 *
 * With spark.sieve.enabled or spark.sieve.bulkFilter.enabled off, the tree runs in written order.
 * The node cannot be left in the plan (nothing else executes it), so this rule always lowers it.
 */
object LowerBulkFilters extends Rule[LogicalPlan] {
  private val MaskBits = 64

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case bf: BulkFilter => lower(bf, BulkFilterOrder.chosenTree(bf.tree, conf))
  }

  /** Where leaf i's bit lives: mask column `group` of its key column's table, bit `bit`. */
  private case class Slot(group: Int, bit: Int)

  private def lower(bf: BulkFilter, tree: FilterTree[Int]): LogicalPlan = {
    val columns = BulkFilterOrder.columnsInOrder(bf, tree)
    var known = Map.empty[Int, Expression] // leaf -> its predicate, once its column is joined
    val joined = columns.foldLeft(bf.child) { (input, leaves) =>
      val slots = leaves.zipWithIndex.map { case (leaf, i) => leaf -> Slot(i / MaskBits, i % MaskBits) }.toMap
      val (table, value, masks) = valueTable(bf, leaves, slots)
      val join = Join(input, table, LeftOuter, Some(EqualTo(bf.keys(leaves.head), value)), JoinHint.NONE)
      known ++= leaves.map { leaf =>
        val slot = slots(leaf)
        val bitSet = Not(EqualTo(
          BitwiseAnd(Coalesce(Seq(masks(slot.group), Literal(0L))), Literal(1L << slot.bit)), Literal(0L)))
        leaf -> (if (bf.leafIncludes(leaf)) bitSet else Not(bitSet))
      }
      couldHold(tree, known) match {
        case Literal(true, _) => join
        case condition => Filter(condition, join)
      }
    }
    Project(bf.child.output, joined)
  }

  /**
   * One row per distinct value of the column's sources, with the OR of the bits of the leaves that
   * hold it: a branch per distinct source (a source two leaves share is read once), then grouped.
   */
  private def valueTable(bf: BulkFilter, leaves: Seq[Int], slots: Map[Int, Slot])
      : (LogicalPlan, Attribute, Seq[Attribute]) = {
    val groups = slots.values.map(_.group).max + 1
    val branches = leaves.groupBy(bf.leafSources).toSeq.sortBy(_._1).map { case (source, sharing) =>
      val bits = (0 until groups).map { g =>
        sharing.map(slots).filter(_.group == g).map(s => 1L << s.bit).foldLeft(0L)(_ | _)
      }
      val maskCols = bits.zipWithIndex.map { case (b, g) => Alias(Literal(b, LongType), s"m$g")() }
      Project(Alias(bf.valueOf(sharing.head), "v")() +: maskCols, bf.sources(source))
    }
    val union = if (branches.size == 1) branches.head else Union(branches)
    val v = union.output.head
    val aggregates = union.output.tail.map { m =>
      Alias(AggregateExpression(BitOrAgg(m), Complete, isDistinct = false), m.name)()
    }
    val values = Alias(v, s"sieve_${bf.keys(leaves.head).name}")()
    val table = Aggregate(Seq(v), values +: aggregates, union)
    (table, values.toAttribute, aggregates.map(_.toAttribute))
  }

  /** The tree with each unknown leaf set to true: false exactly when no answer for them can save it. */
  private def couldHold(tree: FilterTree[Int], known: Map[Int, Expression]): Expression = tree match {
    case Leaf(l) => known.getOrElse(l, Literal(true))
    case AllOf(cs) =>
      val parts = cs.map(couldHold(_, known)).filterNot(_ == Literal(true))
      if (parts.contains(Literal(false))) Literal(false) else balanced(parts, And.apply, Literal(true))
    case AnyOf(cs) =>
      val parts = cs.map(couldHold(_, known))
      if (parts.contains(Literal(true))) Literal(true) else balanced(parts, Or.apply, Literal(false))
  }

  /** A balanced binary tree of `op`, so thousands of leaves do not make a deep expression. */
  private def balanced(parts: Seq[Expression], op: (Expression, Expression) => Expression,
      empty: Expression): Expression = parts.size match {
    case 0 => empty
    case 1 => parts.head
    case n =>
      val (l, r) = parts.splitAt(n / 2)
      op(balanced(l, op, empty), balanced(r, op, empty))
  }
}
