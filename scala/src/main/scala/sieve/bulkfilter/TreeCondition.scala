package sieve.bulkfilter

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, EmptyBlock, ExprCode, FalseLiteral,
  GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.Block.BlockHelper
import org.apache.spark.sql.types.{BooleanType, DataType}

import sieve.keyset.{ValueKey, ValueSets}
import sieve.ordering._

/** What a [[TreeCondition]] with value sets reads at run time: the sets, whether to adapt the order, and
 * where to report what it measured. */
trait TreeRuntime extends ValueSets {
  def adaptive: Boolean
  def stats: Option[TreeStats]
}

/** How a [[TreeCondition]] decides one leaf. */
sealed trait LeafTest
/** Not decided yet (its column is joined later): true, so only rows no answer could keep are dropped. */
case object Undecided extends LeafTest
/** Bit `bit` of `children(input)`, a mask column of a value-table join (a NULL mask has no bits). */
final case class MaskBit(input: Int, bit: Int) extends LeafTest
/** Bit `bit` of the mask of the row's key in value set `column` (its key: `children(maskInputs + column)`). */
final case class SetBit(column: Int, bit: Int) extends LeafTest

/**
 * The bulk-filter tree as ONE expression, however many leaves it has (a thousand-leaf tree written as
 * And/Or nodes would be thousands of expression nodes for every optimizer pass, and generated code too
 * large to compile). Children: `maskInputs` mask columns of value-table joins, then one key per value set.
 *
 * Include holds when the leaf's bit is set, exclude when it is not; a NULL key is in no set. The tree has
 * no negation above its leaves, so an [[Undecided]] leaf counted true gives false exactly when no answer
 * could make the tree hold. Evaluated with short-circuits, children in the order given (the cost order).
 *
 * Generated code reads each key once and, for trees up to `InlineLeaves` leaves without adaptive order,
 * is the tree itself as one Java boolean expression of `&&` / `||`: a value set is probed when a leaf on
 * its column is first reached, once per row. A larger tree (whose expression would pass the JVM's 64 KB
 * method limit), or one whose order adapts, is run by a per-task [[TreeEvaluator]] given each row's masks
 * and keys. No allocation per row either way. `runtime` is where the value sets are found at run time
 * ([[SetFilterExec]] attaches it).
 */
case class TreeCondition(
    tree: FilterTree[Int],
    tests: Seq[LeafTest],
    includes: Seq[Boolean],
    children: Seq[Expression],
    maskInputs: Int,
    runtime: TreeRuntime = null) extends Expression {

  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  // over constants only (leaves decided by semi/anti joins) it folds away instead of running per row
  override def foldable: Boolean = setColumns == 0 && children.forall(_.foldable)

  def setColumns: Int = children.size - maskInputs
  /** The key column value set `c` is probed with. */
  def keyOf(c: Int): Expression = children(maskInputs + c)
  def kindOf(c: Int): ValueKey = ValueKey.of(keyOf(c).dataType)
  @transient private lazy val setLeaves: Seq[Seq[SetBit]] =
    (0 until setColumns).map(c => tests.collect { case s @ SetBit(`c`, _) => s })
  /** Longs per mask of value set `c`. */
  def wordsOf(c: Int): Int = setLeaves(c).map(_.bit / 64).maxOption.getOrElse(0) + 1

  def withRuntime(r: TreeRuntime): TreeCondition = copy(runtime = r)

  @transient lazy val plan: TreePlan = new TreePlan(tree)

  /** A run-time evaluator of this tree (one per task: it holds the row's state and its counts); answers
   * memoised by the row's set ids for a large tree with no mask columns, unless `memo` is false. */
  def newEvaluator(): TreeEvaluator = evaluator(memo = true)

  def evaluator(memo: Boolean): TreeEvaluator = {
    val sets: Int => sieve.keyset.ValueSet = if (runtime == null) _ => null else runtime(_)
    val adaptive = runtime != null && runtime.adaptive
    new TreeEvaluator(this, plan, sets, adaptive, if (adaptive) runtime.stats else None,
      memo && maskInputs == 0 && setColumns > 0 && tree.leaves.size > TreeCondition.InlineLeaves)
  }

  private def inline: Boolean =
    tree.leaves.size <= TreeCondition.InlineLeaves && (runtime == null || !runtime.adaptive)

  @transient private lazy val rowEvaluator = newEvaluator()
  @transient private lazy val rowKeys: Array[UnsafeProjection] = Array.tabulate(setColumns) { c =>
    if (kindOf(c) == ValueKey.Row) UnsafeProjection.create(Seq(keyOf(c))) else null
  }

  override def eval(input: InternalRow): Any = {
    val masks = new Array[Long](maskInputs)
    var i = 0
    while (i < maskInputs) {
      val m = children(i).eval(input)
      masks(i) = if (m == null) 0L else m.asInstanceOf[Long]
      i += 1
    }
    i = 0
    while (i < setColumns) {
      rowEvaluator.setValue(i,
        if (rowKeys(i) != null) { val r = rowKeys(i)(input); if (r.isNullAt(0)) null else r } else keyOf(i).eval(input))
      i += 1
    }
    rowEvaluator.test(masks)
  }

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    if (setColumns > 0 && runtime == null) throw new IllegalStateException("TreeCondition: value sets not attached")
    val masks = (0 until maskInputs).map { i =>
      val m = children(i).genCode(ctx)
      val name = ctx.freshName("mask")
      (name, code"""${m.code}
                   |long $name = ${m.isNull} ? 0L : ${m.value};""".stripMargin)
    }
    val holder = if (setColumns > 0) ctx.addReferenceObj("valueSets", runtime, classOf[ValueSets].getName) else ""
    // per set: the key read, its id variable (-2: not probed yet, -1: absent or NULL), the probe, and the
    // evaluator's call that takes the key instead
    val probes = (0 until setColumns).map { c =>
      val set = ctx.addMutableState(classOf[sieve.keyset.ValueSet].getName, "valueSet", v => s"$v = $holder.apply($c);")
      val id = ctx.freshName("valueId")
      kindOf(c) match {
        case ValueKey.Row =>
          val r = GenerateUnsafeProjection.createCode(ctx, Seq(keyOf(c)))
          val bytes = s"${r.value}.getBaseObject(), ${r.value}.getBaseOffset(), ${r.value}.getSizeInBytes()"
          (set, id, code"""${r.code}
                          |int $id = ${r.value}.isNullAt(0) ? -1 : -2;""".stripMargin,
            s"$set.idOfBytes($bytes)", (e: String) => s"if ($id == -1) $e.setNull($c); else $e.setBytes($c, $bytes);")
        case kind =>
          val k = keyOf(c).genCode(ctx)
          val (probe, give) = kind match {
            case ValueKey.Integral =>
              val v = ValueKey.javaLong(keyOf(c).dataType, k.value.toString)
              (s"$set.idOfLong($v)", (e: String) => s"$e.setLong($c, $v);")
            case ValueKey.Utf8 =>
              val bytes = s"${k.value}.getBaseObject(), ${k.value}.getBaseOffset(), ${k.value}.numBytes()"
              (s"$set.idOfBytes($bytes)", (e: String) => s"$e.setBytes($c, $bytes);")
            case _ =>
              val bytes = s"${k.value}, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET, ${k.value}.length"
              (s"$set.idOfBytes($bytes)", (e: String) => s"$e.setBytes($c, $bytes);")
          }
          (set, id, code"""${k.code}
                          |int $id = ${k.isNull} ? -1 : -2;""".stripMargin,
            probe, (e: String) => s"if ($id == -1) $e.setNull($c); else { ${give(e)} }")
      }
    }
    val read = (masks.map(_._2) ++ probes.map(_._3)).reduceOption(_ + _).getOrElse(EmptyBlock)
    val (fill, result) = if (inline) {
      def leaf(l: Int): String = {
        val test = tests(l) match {
          case Undecided => return "true"
          case MaskBit(m, bit) => s"(${masks(m)._1} & (${1L << bit}L)) != 0L"
          case SetBit(c, bit) =>
            val (set, id, _, probe, _) = probes(c)
            val probed = s"($id != -2 ? $id : ($id = $probe))"
            if (setLeaves(c).size == 1) s"$probed >= 0"
            else s"$probed >= 0 && ($set.masks()[$id * ${wordsOf(c)} + ${bit / 64}] & (${1L << bit}L)) != 0L"
        }
        if (includes(l)) s"($test)" else s"(!($test))"
      }
      def gen(t: FilterTree[Int]): String = t match {
        case Leaf(l) => leaf(l)
        case AllOf(cs) => cs.map(gen).mkString("(", " && ", ")")
        case AnyOf(cs) => cs.map(gen).mkString("(", " || ", ")")
      }
      ("", gen(tree))
    } else {
      val self = ctx.addReferenceObj("bulkFilterTree", this, classOf[TreeCondition].getName)
      val evaluator = ctx.addMutableState(classOf[TreeEvaluator].getName, "treeEvaluator",
        v => s"$v = $self.newEvaluator();")
      val maskBuffer = ctx.addMutableState("long[]", "treeMasks", v => s"$v = new long[$maskInputs];")
      val fills = masks.indices.map(i => s"$maskBuffer[$i] = ${masks(i)._1};") ++ probes.map(_._5(evaluator))
      (fills.mkString("\n"), s"$evaluator.test($maskBuffer)")
    }
    ev.copy(code = code"""$read
                         |$fill
                         |boolean ${ev.value} = $result;""".stripMargin, isNull = FalseLiteral)
  }

  override def toString: String = {
    val inSets = tests.count(_.isInstanceOf[SetBit])
    val joined = tests.count(_.isInstanceOf[MaskBit])
    s"TreeCondition(${tests.size} leaves: $inSets in value sets, $joined joined)"
  }

  override def sql: String = toString

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): TreeCondition =
    copy(children = newChildren)
}

object TreeCondition {
  /** Trees up to this many leaves are generated inline (a few KB of bytecode); larger ones are run by a
   * [[TreeEvaluator]]. */
  val InlineLeaves = 256
}
