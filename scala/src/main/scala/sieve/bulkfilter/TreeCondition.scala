package sieve.bulkfilter

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, EmptyBlock, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block.BlockHelper
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
 *
 * Generated code reads each mask once into a local and, for trees up to `InlineLeaves` leaves, is the
 * tree itself as one Java boolean expression of `&&` / `||` over bit tests; a larger tree (whose
 * expression would pass the JVM's 64 KB method limit) is run by its compiled program over a buffer of
 * the masks held by the task. No allocation per row either way.
 */
case class TreeCondition(
    tree: FilterTree[Int],
    maskOf: Seq[Int],
    bits: Seq[Int],
    includes: Seq[Boolean],
    known: Seq[Boolean],
    children: Seq[Expression]) extends Expression {

  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  // over constants only (leaves decided by semi/anti joins) it folds away instead of running per row
  override def foldable: Boolean = children.forall(_.foldable)

  @transient private lazy val program: Array[Long] => Boolean = compile(tree)

  /** The compiled tree: also what generated code calls for a tree too large to inline. */
  def test(masks: Array[Long]): Boolean = program(masks)

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

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val masks = children.map { child =>
      val m = child.genCode(ctx)
      val name = ctx.freshName("mask")
      (name, code"""${m.code}
                   |long $name = ${m.isNull} ? 0L : ${m.value};""".stripMargin)
    }
    val read = masks.map(_._2).reduceOption(_ + _).getOrElse(EmptyBlock)
    val (fill, result) = if (tree.leaves.size <= TreeCondition.InlineLeaves) {
      def gen(t: FilterTree[Int]): String = t match {
        case Leaf(l) if !known(l) => "true"
        case Leaf(l) => s"((${masks(maskOf(l))._1} & (${1L << bits(l)}L)) ${if (includes(l)) "!=" else "=="} 0L)"
        case AllOf(cs) => cs.map(gen).mkString("(", " && ", ")")
        case AnyOf(cs) => cs.map(gen).mkString("(", " || ", ")")
      }
      ("", gen(tree))
    } else {
      val self = ctx.addReferenceObj("bulkFilterTree", this, classOf[TreeCondition].getName)
      val buffer = ctx.addMutableState("long[]", "treeMasks", v => s"$v = new long[${children.size}];")
      (masks.indices.map(i => s"$buffer[$i] = ${masks(i)._1};").mkString("\n"), s"$self.test($buffer)")
    }
    ev.copy(code = code"""$read
                         |$fill
                         |boolean ${ev.value} = $result;""".stripMargin, isNull = FalseLiteral)
  }

  override def toString: String = {
    val joined = known.count(identity)
    s"bulk_filter_tree(${known.size} leaves, $joined joined)"
  }

  override def sql: String = toString

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): TreeCondition =
    copy(children = newChildren)
}

object TreeCondition {
  /** Trees up to this many leaves are generated inline (a few KB of bytecode); larger ones call the
   * compiled program. */
  val InlineLeaves = 256
}
