package sieve.keyset

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.GeneratePredicate
import org.apache.spark.sql.types.{DataType, DateType, IntegerType, LongType, ShortType, StringType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import sieve.membership._

/** The shared membership predicate: generated code and interpreted eval give the same answer, a long
 * key is probed as a long, any other key as its row, a NULL key is in no set. */
class KeySetContainsSuite extends AnyFunSuite {
  private class Recorder(keep: Long => Boolean, keepRow: UnsafeRow => Boolean) extends KeyProbe {
    var longs = 0
    var rows = 0
    def containsLong(v: Long): Boolean = { longs += 1; keep(v) }
    def containsRow(key: UnsafeRow): Boolean = { rows += 1; keepRow(key) }
  }

  private def both(predicate: KeySetContains, input: InternalRow): Boolean = {
    val interpreted = predicate.eval(input).asInstanceOf[Boolean]
    val generated = GeneratePredicate.generate(predicate)
    generated.initialize(0)
    assert(generated.eval(input) === interpreted, s"codegen and eval disagree on $input")
    interpreted
  }

  Seq[(DataType, Any, Long)]((IntegerType, 7, 7L), (LongType, 7L, 7L), (ShortType, 7.toShort, 7L),
      (DateType, 7, 7L)).foreach { case (t, value, asLong) =>
    test(s"a single $t key is probed as a long") {
      val probe = new Recorder(_ == asLong, _ => fail("a long key must not be probed as a row"))
      val p = KeySetContains(probe, Seq(BoundReference(0, t, nullable = true)))
      assert(both(p, InternalRow(value)))
      assert(!both(p, InternalRow(null)), "a NULL key is in no set")
      assert(probe.longs === 2, "one probe per non-NULL row, codegen and eval")
    }
  }

  test("a string or composite key is probed as its row; a NULL column means no match") {
    val keys: Seq[Expression] = Seq(BoundReference(0, IntegerType, nullable = true), BoundReference(1, StringType, nullable = true))
    val probe = new Recorder(_ => fail("a composite key must not be probed as a long"),
      r => r.getInt(0) == 1 && r.getUTF8String(1).toString == "a")
    val p = KeySetContains(probe, keys)
    assert(both(p, InternalRow(1, UTF8String.fromString("a"))))
    assert(!both(p, InternalRow(1, UTF8String.fromString("b"))))
    assert(!both(p, InternalRow(1, null)))
    assert(probe.rows === 4)
    val single = KeySetContains(new Recorder(_ => false, _.getUTF8String(0).toString == "x"),
      Seq(BoundReference(0, StringType, nullable = true)))
    assert(both(single, InternalRow(UTF8String.fromString("x"))))
  }
}
