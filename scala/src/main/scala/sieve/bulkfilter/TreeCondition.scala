package sieve.bulkfilter

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, EmptyBlock, ExprCode, FalseLiteral,
  GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.Block.BlockHelper
import org.apache.spark.sql.types.{BooleanType, DataType}

import sieve.keyset.{ValueKey, ValueSets}
import sieve.ordering._

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
 * Generated code reads each key once and, for trees up to `InlineLeaves` leaves, is the tree itself as one
 * Java boolean expression of `&&` / `||`: a value set is probed when a leaf on its column is first reached,
 * once per row. A larger tree (whose expression would pass the JVM's 64 KB method limit) probes every set
 * and runs its compiled program over per-task buffers. No allocation per row either way.
 * `sets` is where the value sets are found at run time ([[SetFilterExec]] attaches it).
 */
case class TreeCondition(
    tree: FilterTree[Int],
    tests: Seq[LeafTest],
    includes: Seq[Boolean],
    children: Seq[Expression],
    maskInputs: Int,
    sets: ValueSets = null) extends Expression {

  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  // over constants only (leaves decided by semi/anti joins) it folds away instead of running per row
  override def foldable: Boolean = setColumns == 0 && children.forall(_.foldable)

  def setColumns: Int = children.size - maskInputs
  /** The key column value set `c` is probed with. */
  def keyOf(c: Int): Expression = children(maskInputs + c)
  private def kindOf(c: Int): ValueKey = ValueKey.of(keyOf(c).dataType)
  /** Longs per mask of set `c`, and whether its masks must be read at all (a set of one leaf: any value in
   * it is in that leaf). */
  @transient private lazy val setLeaves: Seq[Seq[SetBit]] =
    (0 until setColumns).map(c => tests.collect { case s @ SetBit(`c`, _) => s })
  private def words(c: Int): Int = setLeaves(c).map(_.bit / 64).maxOption.getOrElse(0) + 1

  def withSets(s: ValueSets): TreeCondition = copy(sets = s)

  @transient private lazy val program: (Array[Long], Array[Int]) => Boolean = compile(tree)
  @transient private lazy val setArray = Array.tabulate(setColumns)(c => sets(c))

  /** The compiled tree over the mask columns' values and the keys' ids in their sets (-1: absent): also
   * what generated code calls for a tree too large to inline. */
  def test(masks: Array[Long], ids: Array[Int]): Boolean = program(masks, ids)

  private def compile(t: FilterTree[Int]): (Array[Long], Array[Int]) => Boolean = t match {
    case Leaf(l) => (tests(l), includes(l)) match {
      case (Undecided, _) => (_, _) => true
      case (MaskBit(m, bit), include) =>
        val b = 1L << bit
        (masks, _) => ((masks(m) & b) != 0) == include
      case (SetBit(c, bit), include) =>
        val (w, b, at) = (words(c), 1L << bit, bit / 64)
        (_, ids) => { val id = ids(c); (id >= 0 && (setArray(c).masks(id * w + at) & b) != 0) == include }
    }
    case AllOf(cs) =>
      val parts = cs.map(compile).toArray
      (m, ids) => { var i = 0; while (i < parts.length && parts(i)(m, ids)) i += 1; i == parts.length }
    case AnyOf(cs) =>
      val parts = cs.map(compile).toArray
      (m, ids) => { var i = 0; while (i < parts.length && !parts(i)(m, ids)) i += 1; i < parts.length }
  }

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
    val ids = new Array[Int](setColumns)
    i = 0
    while (i < setColumns) {
      val key = if (rowKeys(i) != null) { val r = rowKeys(i)(input); if (r.isNullAt(0)) null else r }
        else keyOf(i).eval(input)
      ids(i) = if (key == null) -1 else ValueKey.idOf(kindOf(i), key, setArray(i))
      i += 1
    }
    program(masks, ids)
  }

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    if (setColumns > 0 && sets == null) throw new IllegalStateException("TreeCondition: value sets not attached")
    val masks = (0 until maskInputs).map { i =>
      val m = children(i).genCode(ctx)
      val name = ctx.freshName("mask")
      (name, code"""${m.code}
                   |long $name = ${m.isNull} ? 0L : ${m.value};""".stripMargin)
    }
    val holder = if (setColumns > 0) ctx.addReferenceObj("valueSets", sets, classOf[ValueSets].getName) else ""
    // per set: the key read, its id variable (-2: not probed yet, -1: absent or NULL), the probe, the masks
    val probes = (0 until setColumns).map { c =>
      val set = ctx.addMutableState(classOf[sieve.keyset.ValueSet].getName, "valueSet", v => s"$v = $holder.apply($c);")
      val id = ctx.freshName("valueId")
      val (read, probe) = kindOf(c) match {
        case ValueKey.Row =>
          val r = GenerateUnsafeProjection.createCode(ctx, Seq(keyOf(c)))
          (code"""${r.code}
                 |int $id = ${r.value}.isNullAt(0) ? -1 : -2;""".stripMargin,
            s"$set.idOfBytes(${r.value}.getBaseObject(), ${r.value}.getBaseOffset(), ${r.value}.getSizeInBytes())")
        case kind =>
          val k = keyOf(c).genCode(ctx)
          val call = kind match {
            case ValueKey.Integral => s"$set.idOfLong(${ValueKey.javaLong(keyOf(c).dataType, k.value.toString)})"
            case ValueKey.Utf8 => s"$set.idOfBytes(${k.value}.getBaseObject(), ${k.value}.getBaseOffset(), ${k.value}.numBytes())"
            case _ => s"$set.idOfBytes(${k.value}, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET, ${k.value}.length)"
          }
          (code"""${k.code}
                 |int $id = ${k.isNull} ? -1 : -2;""".stripMargin, call)
      }
      (set, id, read, probe)
    }
    val read = (masks.map(_._2) ++ probes.map(_._3)).reduceOption(_ + _).getOrElse(EmptyBlock)
    val (fill, result) = if (tree.leaves.size <= TreeCondition.InlineLeaves) {
      def leaf(l: Int): String = {
        val (test, op) = tests(l) match {
          case Undecided => return "true"
          case MaskBit(m, bit) => (s"(${masks(m)._1} & (${1L << bit}L)) != 0L", "")
          case SetBit(c, bit) =>
            val (set, id, _, probe) = probes(c)
            val probed = s"($id != -2 ? $id : ($id = $probe))"
            if (setLeaves(c).size == 1) (s"$probed >= 0", "")
            else (s"$probed >= 0 && ($set.masks()[$id * ${words(c)} + ${bit / 64}] & (${1L << bit}L)) != 0L", "")
        }
        if (includes(l)) s"($test$op)" else s"(!($test))"
      }
      def gen(t: FilterTree[Int]): String = t match {
        case Leaf(l) => leaf(l)
        case AllOf(cs) => cs.map(gen).mkString("(", " && ", ")")
        case AnyOf(cs) => cs.map(gen).mkString("(", " || ", ")")
      }
      ("", gen(tree))
    } else {
      val self = ctx.addReferenceObj("bulkFilterTree", this, classOf[TreeCondition].getName)
      val maskBuffer = ctx.addMutableState("long[]", "treeMasks", v => s"$v = new long[$maskInputs];")
      val idBuffer = ctx.addMutableState("int[]", "treeIds", v => s"$v = new int[$setColumns];")
      val fills = masks.indices.map(i => s"$maskBuffer[$i] = ${masks(i)._1};") ++
        probes.zipWithIndex.map { case ((_, id, _, probe), c) => s"$idBuffer[$c] = $id != -2 ? $id : $probe;" }
      (fills.mkString("\n"), s"$self.test($maskBuffer, $idBuffer)")
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
  /** Trees up to this many leaves are generated inline (a few KB of bytecode); larger ones call the
   * compiled program. */
  val InlineLeaves = 256
}
