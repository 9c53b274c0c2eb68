package sieve.bulkfilter

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{BooleanType, DataType}

import sieve.ordering._

/**
 * The bulk-filter tree as ONE expression over the mask columns of the joined value tables, however
 * many leaves it has: a thousand-leaf tree written as And/Or/bit tests would be thousands of
 * expression nodes for every optimizer pass, and generated code too large to compile.
 *
 * Leaf `i` reads bit `bits(i)` of child `maskOf(i)` (a NULL mask, from a key with no match, has no
 * bits); include holds when the bit is set, exclude when it is not. Leaves with `known(i)` false are
 * not joined yet and count as true: the tree has no negation above its leaves, so that gives false
 * exactly when no answer for them could make the tree hold. Evaluated with short-circuits, children
 * in the order given (the cost order).
 */
case class TreeCondition(
    tree: FilterTree[Int],
    maskOf: Seq[Int],
    bits: Seq[Int],
    includes: Seq[Boolean],
    known: Seq[Boolean],
    children: Seq[Expression]) extends Expression with CodegenFallback {

  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  // over constants only (leaves decided by semi/anti joins) it folds away instead of running per row
  override def foldable: Boolean = children.forall(_.foldable)

  @transient private lazy val program: Array[Long] => Boolean = compile(tree)

  private def compile(t: FilterTree[Int]): Array[Long] => Boolean = t match {
    case Leaf(l) if !known(l) => _ => true
    case Leaf(l) =>
      val (m, bit, include) = (maskOf(l), 1L << bits(l), includes(l))
      masks => ((masks(m) & bit) != 0) == include
    case AllOf(cs) =>
      val parts = cs.map(compile).toArray
      masks => { var i = 0; while (i < parts.length && parts(i)(masks)) i += 1; i == parts.length }
    case AnyOf(cs) =>
      val parts = cs.map(compile).toArray
      masks => { var i = 0; while (i < parts.length && !parts(i)(masks)) i += 1; i < parts.length }
  }

  override def eval(input: InternalRow): Any = {
    val masks = new Array[Long](children.length)
    var i = 0
    while (i < masks.length) {
      val m = children(i).eval(input)
      masks(i) = if (m == null) 0L else m.asInstanceOf[Long]
      i += 1
    }
    program(masks)
  }

  override def toString: String = {
    val joined = known.count(identity)
    s"bulk_filter_tree(${known.size} leaves, $joined joined)"
  }

  override def sql: String = toString

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): TreeCondition =
    copy(children = newChildren)
}
