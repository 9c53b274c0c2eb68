package sieve.keyset

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Predicate, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral, GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.Block.BlockHelper

import sieve.membership._

/** Where a [[KeySetContains]] finds its set when rows are tested: filled on the driver before any task
 * runs (the dynamic filter's set arrives after the stage's code is generated, so the code holds this,
 * not the set). */
trait KeyProbe extends Serializable {
  def containsLong(v: Long): Boolean
  def containsRow(key: UnsafeRow): Boolean
}

/**
 * Whether the key made of `keys` is in the set `probe` reads: the one per-row membership predicate
 * every feature that tests rows against a key set uses, with generated code (as Spark's
 * BloomFilterMightContain). A single integral key is tested as a long, no row built; any other key as
 * an UnsafeRow of its columns (its bytes, which is why keys must be binary-stable). A key with a NULL
 * column is in no set: false, never NULL, as a join drops it.
 */
case class KeySetContains(probe: KeyProbe, keys: Seq[Expression]) extends Expression with Predicate {
  override def children: Seq[Expression] = keys
  override def nullable: Boolean = false

  private def asLong: Option[UnsafeRow => Long] =
    if (keys.size == 1) KeyShape(keys.map(_.dataType)).asLong else None

  @transient private lazy val project = UnsafeProjection.create(keys)
  @transient private lazy val toLong = asLong.orNull

  override def eval(input: InternalRow): Any = {
    val key = project(input)
    !key.anyNull && (if (toLong != null) probe.containsLong(toLong(key)) else probe.containsRow(key))
  }

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val p = ctx.addReferenceObj("keyProbe", probe, classOf[KeyProbe].getName)
    val code = if (asLong.isDefined) {
      val k = keys.head.genCode(ctx)
      code"""${k.code}
            |boolean ${ev.value} = !${k.isNull} && $p.containsLong((long) ${k.value});""".stripMargin
    } else {
      val k = GenerateUnsafeProjection.createCode(ctx, keys)
      code"""${k.code}
            |boolean ${ev.value} = !${k.value}.anyNull() && $p.containsRow(${k.value});""".stripMargin
    }
    ev.copy(code = code, isNull = FalseLiteral)
  }

  override def toString: String = s"key_set_contains(${keys.mkString(", ")})"
  override def sql: String = toString

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): KeySetContains =
    copy(keys = newChildren)
}
