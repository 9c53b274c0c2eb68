package sieve.dynamicfilter

import org.apache.spark.sql.types.IntegerType
import org.scalatest.funsuite.AnyFunSuite

import sieve.keyset.{BitmapKeys, InSetKeys}
import sieve.membership.{KeyShape, LongBitmap, LongSet}
import sieve.scan.KeyPrunedFileIndex.RowGroup

class KeepEstimateSuite extends AnyFunSuite {
  private val shape = KeyShape(Seq(IntegerType))

  private def inSet(keys: Long*): InSetKeys = {
    val set = new LongSet()
    keys.foreach(set.add)
    new InSetKeys(shape, Some(set), None, Some((keys.min, keys.max)))
  }

  private def group(min: Long, max: Long, rows: Long = 100) = RowGroup(min, max, hasValues = true, rows)

  test("every value of the row groups' ranges is a key: everything is kept") {
    assert(KeepEstimate(inSet(0L until 100L: _*), Seq(group(0, 49), group(50, 99))) === Some(1.0))
  }

  test("keys spread over the range keep their density; outside it, nothing") {
    val half = inSet((0L until 100L by 2): _*) // 50 keys over [0, 98]
    assert(math.abs(KeepEstimate(half, Seq(group(0, 98))).get - 50.0 / 99) < 1e-9)
    // a second group of the same rows beyond the keys' range keeps nothing: half the estimate
    assert(math.abs(KeepEstimate(half, Seq(group(0, 98), group(500, 600))).get - 25.0 / 99) < 1e-9)
    // an all-NULL row group keeps nothing
    assert(KeepEstimate(inSet(0L until 10L: _*), Seq(group(0, 9), RowGroup(0, 0, hasValues = false, 100))) === Some(0.5))
  }

  test("a row group wider than the keys: the share of its values they cover, weighted by rows") {
    // keys 0..9 dense; group [0, 99] holds 100 values: 10% kept; group [5, 14] (300 rows): half of it
    val estimate = KeepEstimate(inSet(0L until 10L: _*), Seq(group(0, 99), group(5, 14, rows = 300))).get
    assert(math.abs(estimate - (100 * 0.1 + 300 * 0.5) / 400) < 1e-9)
  }

  test("a bitmap counts its distinct keys, not the key rows it was built from") {
    val bitmap = new LongBitmap(0, 99)
    (0L until 100L by 4).foreach(bitmap.add) // 25 distinct keys
    val keys = new BitmapKeys(shape, bitmap, 10000L) // from 10,000 key rows
    assert(math.abs(KeepEstimate(keys, Seq(group(0, 99))).get - 0.25) < 1e-9)
  }

  test("no estimate without a known key count and range, or without rows") {
    assert(KeepEstimate(sieve.keyset.PassThrough, Seq(group(0, 9))) === None)
    assert(KeepEstimate(sieve.keyset.EmptyKeySet, Seq(group(0, 9))) === None)
    assert(KeepEstimate(inSet(1L, 2L), Nil) === None)
  }
}
