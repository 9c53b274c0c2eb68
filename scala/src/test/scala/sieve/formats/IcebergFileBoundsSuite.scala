package sieve.formats

import scala.jdk.CollectionConverters._

import org.apache.iceberg.types.Conversions
import org.apache.iceberg.types.Types.{DateType, IntegerType, LongType, NestedField}
import org.scalatest.funsuite.AnyFunSuite

import sieve.keyset.KeyRanges

/** A data file's bounds on a key column as its manifest entry keeps them, by the column's field id. */
class IcebergFileBoundsSuite extends AnyFunSuite {
  private val k = NestedField.optional(1, "k", IntegerType.get())

  // (a manifest entry's statistics as plain maps: building a DataFile needs the Avro of Iceberg's own build, which
  // Spark 3.5's older Avro on this classpath lacks)
  private def file(values: Long, nulls: Long, bounds: Option[(java.nio.ByteBuffer, java.nio.ByteBuffer)]) = {
    val id = Integer.valueOf(1)
    def one[T](v: T) = Map(id -> v).asJava
    val (lower, upper) = bounds.map { case (lo, hi) => (one(lo), one(hi)) }.getOrElse((null, null))
    IcebergFileBounds.Stats(lower, upper, one(java.lang.Long.valueOf(values)), one(java.lang.Long.valueOf(nulls)))
  }

  private def int(v: Int) = Conversions.toByteBuffer(IntegerType.get(), Integer.valueOf(v))

  test("an int column's bounds, tested against key ranges") {
    val b = IcebergFileBounds.bounds(file(10, 0, Some((int(100), int(140)))), k).get
    assert(b === FileBounds(100, 140, hasValues = true))
    assert(b.mayHold(KeyRanges(Array((0L, 99L), (140L, 150L)))))
    assert(!b.mayHold(KeyRanges(Array((0L, 99L), (141L, 150L)))))
  }

  test("a long column promoted from int keeps 4-byte bounds in older files; a date's are days") {
    val promoted = NestedField.optional(1, "k", LongType.get())
    assert(IcebergFileBounds.bounds(file(10, 0, Some((int(-5), int(7)))), promoted).get ===
      FileBounds(-5, 7, hasValues = true))
    val date = NestedField.optional(1, "d", DateType.get())
    assert(IcebergFileBounds.bounds(file(10, 0, Some((int(19000), int(19030)))), date).get.upper === 19030)
  }

  test("without bounds: all NULL holds no key; unknown is read (absent)") {
    val allNull = IcebergFileBounds.bounds(file(10, 10, None), k).get
    assert(!allNull.hasValues && !allNull.mayHold(KeyRanges(Array((Long.MinValue, Long.MaxValue)))))
    assert(IcebergFileBounds.bounds(file(10, 3, None), k).isEmpty)
    // another field's bounds say nothing of this one
    assert(IcebergFileBounds.bounds(file(10, 0, Some((int(1), int(2)))), NestedField.optional(2, "j", IntegerType.get()))
      .isEmpty)
  }
}
