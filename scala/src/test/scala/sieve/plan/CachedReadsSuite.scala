package sieve.plan

import java.util.concurrent.atomic.AtomicInteger

import org.scalatest.funsuite.AnyFunSuite

class CachedReadsSuite extends AnyFunSuite {
  test("each key read once while kept, values in the items' order, the least recently used dropped past the size") {
    val reads = new CachedReads[Int, String]("test-reads", threads = 2, size = 2)
    val count = new AtomicInteger()
    def read(items: Seq[Int]) = reads.all(items)(i => i % 10) { i =>
      val caller = Thread.currentThread
      () => { assert(Thread.currentThread ne caller); count.incrementAndGet(); s"v${i % 10}" }
    }
    assert(read(Seq(1, 2, 11)) === Seq("v1", "v2", "v1"))
    assert(count.get === 3) // 1 and 11 submitted together: both read
    assert(read(Seq(2, 1)) === Seq("v2", "v1") && count.get === 3)
    assert(read(Seq(3)) === Seq("v3") && count.get === 4) // 2 dropped: least recently used
    assert(read(Seq(1)) === Seq("v1") && count.get === 4)
    assert(read(Seq(2)) === Seq("v2") && count.get === 5)
  }
}
