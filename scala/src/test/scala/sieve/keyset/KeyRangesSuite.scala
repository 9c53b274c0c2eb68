package sieve.keyset

import org.scalatest.funsuite.AnyFunSuite

import sieve.membership._

class KeyRangesSuite extends AnyFunSuite {
  private def cover(keys: Seq[Long], limit: Int) = KeyRanges.cover(keys.toArray, limit).bounds.toSeq

  test("runs of consecutive keys are one range each; more runs than the limit are cut at the widest gaps") {
    val keys = Seq(50L, 1, 11, 2, 3, 10, 2)
    assert(cover(keys, 6) === Seq((1, 3), (10, 11), (50, 50)))
    assert(cover(keys, 3) === Seq((1, 3), (10, 11), (50, 50)))
    assert(cover(keys, 2) === Seq((1, 11), (50, 50)))
    assert(cover(keys, 1) === Seq((1, 50)))
    assert(cover(Nil, 4).isEmpty)
  }

  test("gaps wider than Long.MaxValue are compared unsigned") {
    // 0 - MinValue = 2^63 (negative as a signed long) is wider than MaxValue - 0 = 2^63 - 1
    assert(cover(Seq(Long.MinValue, 0, Long.MaxValue), 2) === Seq((Long.MinValue, Long.MinValue), (0, Long.MaxValue)))
  }

  test("overlaps: a [min, max] statistic meets some interval") {
    val r = KeyRanges(Array((1L, 3L), (10L, 11L), (50L, 50L)))
    assert(r.overlaps(0, 1) && r.overlaps(3, 9) && r.overlaps(11, 20) && r.overlaps(50, 50) && r.overlaps(-5, 100))
    assert(!r.overlaps(4, 9) && !r.overlaps(12, 49) && !r.overlaps(51, 99) && !r.overlaps(-9, 0))
    assert(!KeyRanges(Array.empty).overlaps(Long.MinValue, Long.MaxValue))
  }

  test("a bitmap's runs give the same cover, without listing its keys") {
    val rnd = new scala.util.Random(3)
    val keys = (Seq.fill(3000)(rnd.nextInt(5000).toLong) ++ (100L until 300L) ++ Seq(-64L, 4999L)).distinct
    val bitmap = new LongBitmap(-64, 4999)
    keys.foreach(bitmap.add)
    Seq(1, 2, 32, 10000).foreach { limit =>
      assert(KeyRanges.coverRuns(bitmap.foreachRun, limit).bounds.toSeq === cover(keys, limit), s"limit $limit")
    }
    val runs = Seq.newBuilder[(Long, Long)]
    bitmap.foreachRun((a, b) => runs += ((a, b)))
    assert(runs.result().flatMap { case (a, b) => a to b } === keys.sorted)
  }

  test("every key lies in the cover") {
    val rnd = new scala.util.Random(7)
    val keys = Seq.fill(5000)(rnd.nextInt(1000000).toLong).distinct
    val r = KeyRanges.cover(keys.toArray, 32)
    assert(r.size <= 32)
    assert(keys.forall(k => r.overlaps(k, k)))
  }
}
