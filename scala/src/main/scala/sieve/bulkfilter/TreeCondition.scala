package sieve.bulkfilter

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, EmptyBlock, ExprCode, FalseLiteral,
  GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.Block.BlockHelper
import org.apache.spark.sql.types.{BooleanType, DataType}

import sieve.valueset.{ValueKey, ValueSets}
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
 * Generated code reads each key once and, for trees up to `InlineLeaves` leaves, is the tree itself: one
 * Java boolean expression of `&&` / `||` in a fixed order, or, when the order adapts, a loop per node over
 * the children's current order (a switch to each child's code), with the rows the order is measured on
 * run by a per-task [[TreeEvaluator]]. A value set is probed when a leaf on its column is first reached,
 * once per row. A larger tree (whose code would pass the JVM's 64 KB method limit) is run by the
 * evaluator alone, given each row's masks and keys. No allocation per row either way. `runtime` is where the value sets are found at run time
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
  def wordsOf(c: Int): Int = setLeaves(c).map(_.bit / 64).reduceOption(_ max _).getOrElse(0) + 1

  def withRuntime(r: TreeRuntime): TreeCondition = copy(runtime = r)

  @transient lazy val plan: TreePlan = new TreePlan(tree)

  /** A run-time evaluator of this tree (one per task: it holds the row's state and its counts); answers
   * memoised by the row's set ids for a large tree with no mask columns, unless `memo` is false. */
  def newEvaluator(): TreeEvaluator = evaluator(memo = true)

  def evaluator(memo: Boolean): TreeEvaluator = {
    val sets: Int => sieve.valueset.ValueSet = if (runtime == null) _ => null else runtime(_)
    val adaptive = runtime != null && runtime.adaptive
    new TreeEvaluator(this, plan, sets, adaptive, if (adaptive) runtime.stats else None,
      memo && maskInputs == 0 && setColumns > 0 && tree.leaves.size > TreeCondition.InlineLeaves)
  }

  private def inline: Boolean = tree.leaves.size <= TreeCondition.InlineLeaves
  private def adaptive: Boolean = runtime != null && runtime.adaptive

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
    // Each row's masks, keys and set ids are fields, so that large subtrees can be methods of their own
    // (a method above 8,000 bytes of bytecode is never compiled by the JIT).
    val masks = (0 until maskInputs).map { i =>
      val m = children(i).genCode(ctx)
      val name = ctx.addMutableState("long", "mask")
      (name, code"""${m.code}
                   |$name = ${m.isNull} ? 0L : ${m.value};""".stripMargin)
    }
    val holder = if (setColumns > 0) ctx.addReferenceObj("valueSets", runtime, classOf[ValueSets].getName) else ""
    // per integral set of several leaves: its leaf bitmaps' field and the row's offset in them
    val leafBitmaps = scala.collection.mutable.Map.empty[Int, (String, String)]
    // An integral column of several leaves: the row's offset in the set's leaf bitmaps (-1: a NULL key,
    // outside them, or none kept), as code resetting it and code setting it from the key.
    def leafOffset(c: Int, set: String, key: String): (String, String) =
      if (setLeaves(c).size == 1) ("", "") else {
        val bitmaps = ctx.addMutableState("long[][]", "leafBitmaps", v => s"$v = $set.leafBitmaps();")
        val lo = ctx.addMutableState("long", "bitmapLo", v => s"$v = $set.denseLo();")
        val off = ctx.addMutableState("int", "bitmapOffset")
        leafBitmaps(c) = (bitmaps, off)
        (s"\n$off = -1;",
          s" if ($bitmaps != null) { long o = $key - $lo; if (o >= 0 && o < $bitmaps[0].length * 64L) $off = (int) o; }")
      }
    // per set: the key read, its id field (-2: not probed yet, -1: absent or NULL), the probe, and the
    // evaluator's call that takes the key instead
    val probes = (0 until setColumns).map { c =>
      val set = ctx.addMutableState(classOf[sieve.valueset.ValueSet].getName, "valueSet", v => s"$v = $holder.apply($c);")
      val id = ctx.addMutableState("int", "valueId")
      kindOf(c) match {
        case ValueKey.Row =>
          val r = GenerateUnsafeProjection.createCode(ctx, Seq(keyOf(c)))
          val key = ctx.addMutableState(classOf[org.apache.spark.sql.catalyst.expressions.UnsafeRow].getName, "key")
          val bytes = s"$key.getBaseObject(), $key.getBaseOffset(), $key.getSizeInBytes()"
          (set, id, code"""${r.code}
                          |$key = ${r.value};
                          |$id = $key.isNullAt(0) ? -1 : -2;""".stripMargin,
            s"$set.idOfBytes($bytes)", (e: String) => s"if ($id == -1) $e.setNull($c); else $e.setBytes($c, $bytes);")
        case kind =>
          val k = keyOf(c).genCode(ctx)
          // the key kept in primitive fields (a UTF8String kept in a field would be allocated for every row):
          // code run before the NULL check, code storing a key, the probe, the evaluator's call taking it
          val (reset, store, probe, give) = kind match {
            case ValueKey.Integral =>
              val key = ctx.addMutableState("long", "key")
              val (reset, offset) = leafOffset(c, set, key)
              (reset, s"$key = ${ValueKey.javaLong(keyOf(c).dataType, k.value.toString)};$offset",
                s"$set.idOfLong($key)", s"setLong($c, $key);")
            case ValueKey.Utf8 =>
              val (base, offset, length) = (ctx.addMutableState("Object", "keyBase"),
                ctx.addMutableState("long", "keyOffset"), ctx.addMutableState("int", "keyLength"))
              ("", s"$base = ${k.value}.getBaseObject(); $offset = ${k.value}.getBaseOffset(); $length = ${k.value}.numBytes();",
                s"$set.idOfBytes($base, $offset, $length)", s"setBytes($c, $base, $offset, $length);")
            case _ =>
              val key = ctx.addMutableState("byte[]", "key")
              val bytes = s"$key, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET, $key.length"
              ("", s"$key = ${k.value};", s"$set.idOfBytes($bytes)", s"setBytes($c, $bytes);")
          }
          (set, id, code"""${k.code}
                          |$id = ${k.isNull} ? -1 : -2;$reset
                          |if ($id == -2) { $store }""".stripMargin,
            probe, (e: String) => s"if ($id == -1) $e.setNull($c); else $e.$give")
      }
    }
    val read = (masks.map(_._2) ++ probes.map(_._3)).reduceOption(_ + _).getOrElse(EmptyBlock)
    lazy val evaluator = {
      val self = ctx.addReferenceObj("bulkFilterTree", this, classOf[TreeCondition].getName)
      ctx.addMutableState(classOf[TreeEvaluator].getName, "treeEvaluator", v => s"$v = $self.newEvaluator();")
    }
    lazy val maskBuffer = ctx.addMutableState("long[]", "treeMasks", v => s"$v = new long[$maskInputs];")
    lazy val fills = (masks.indices.map(i => s"$maskBuffer[$i] = ${masks(i)._1};") ++ probes.map(_._5(evaluator))).mkString("\n")
    val (fill, result) = if (inline) {
      def leaf(l: Int): String = {
        val test = tests(l) match {
          case Undecided => return "true"
          case MaskBit(m, bit) => s"(${masks(m)._1} & (${1L << bit}L)) != 0L"
          case SetBit(c, bit) =>
            val (set, id, _, probe, _) = probes(c)
            val probed = s"($id != -2 ? $id : ($id = $probe))"
            if (setLeaves(c).size == 1) s"$probed >= 0"
            else {
              val byId = s"$probed >= 0 && ($set.masks()[$id * ${wordsOf(c)} + ${bit / 64}] & (${1L << bit}L)) != 0L"
              leafBitmaps.get(c).fold(byId) { case (bitmaps, off) =>
                val bitmap = ctx.addMutableState("long[]", "leafBitmap", v =>
                  s"$v = $bitmaps == null ? null : $bitmaps.length > $bit ? $bitmaps[$bit] : new long[$bitmaps[0].length];")
                s"$bitmaps != null ? ($off >= 0 && ($bitmap[$off >>> 6] & (1L << $off)) != 0L) : ($byId)"
              }
            }
        }
        if (includes(l)) s"($test)" else s"(!($test))"
      }
      if (!adaptive) {
        def gen(n: Int): String = {
          val expr = if (plan.leafOf(n) >= 0) leaf(plan.leafOf(n))
            else plan.kids(n).map(gen).mkString("(", if (plan.isAnd(n)) " && " else " || ", ")")
          if (plan.leafOf(n) < 0 && n > 0 && plan.leafCount(n) > TreeCondition.MethodLeaves) s"${function(ctx, "", expr)}()" else expr
        }
        ("", s"${function(ctx, "", gen(0))}()")
      } else {
        // Node n's children in the evaluator's current order: a loop over its order array, a switch to
        // the child's inline code; the sampled rows go to the evaluator, which measures and re-sorts.
        val order = ctx.addMutableState("int[][]", "treeOrder", v => s"$v = $evaluator.currentOrder();")
        def node(n: Int): (String, String) = {
          val v = ctx.freshName("node")
          if (plan.leafOf(n) >= 0) (s"boolean $v = ${leaf(plan.leafOf(n))};", v)
          else {
            val (o, j) = (ctx.freshName("order"), ctx.freshName("j"))
            val cases = plan.kids(n).map { k =>
              val (code, kv) = node(k)
              s"""case $k: { $code
                 |  $v = $kv; break; }""".stripMargin
            }
            val and = plan.isAnd(n)
            val code = s"""boolean $v = $and;
                |int[] $o = $order[$n];
                |for (int $j = 0; $j < $o.length && ${if (and) v else s"!$v"}; $j++) {
                |  switch ($o[$j]) {
                |    ${cases.mkString("\n")}
                |  }
                |}""".stripMargin
            if (n > 0 && plan.leafCount(n) > TreeCondition.MethodLeaves) {
              val w = ctx.freshName("node")
              (s"boolean $w = ${function(ctx, code, v)}();", w)
            } else (code, v)
          }
        }
        val (code, v) = node(0)
        val answer = ctx.freshName("treeAnswer")
        (s"""boolean $answer;
            |if ($evaluator.sampling()) {
            |  $fills
            |  $answer = $evaluator.measured($maskBuffer);
            |} else {
            |  $answer = ${function(ctx, code, v)}();
            |}""".stripMargin, answer)
      }
    } else (fills, s"$evaluator.test($maskBuffer)")
    ev.copy(code = code"""$read
                         |$fill
                         |boolean ${ev.value} = $result;""".stripMargin, isNull = FalseLiteral)
  }

  /** A new method of the generated class running `body` and returning `answer`; its name, to call. */
  private def function(ctx: CodegenContext, body: String, answer: String): String = {
    val name = ctx.freshName("treeNode")
    ctx.addNewFunction(name,
      s"""private boolean $name() {
         |  $body
         |  return $answer;
         |}""".stripMargin)
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
  /** A subtree of more leaves is a method of its own in generated code. */
  val MethodLeaves = 16
}
