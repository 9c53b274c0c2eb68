package sieve.dynamicfilter

import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._

import org.apache.spark.scheduler.SieveRunningTasks

import sieve.SieveSessionSuite

/** The running tasks a wait's bound counts idle cores from ([[WaitBound]]): the task scheduler's, at once. */
class RunningTasksSuite extends SieveSessionSuite {
  test("tasks are counted while they run and not a moment after they end") {
    val sc = spark.sparkContext
    val job = Future(sc.parallelize(0 until 2, 2).foreach(_ => RunningTasksSuite.release.await(30, TimeUnit.SECONDS)))(
      ExecutionContext.global)
    val deadline = System.nanoTime() + 10.seconds.toNanos
    while (SieveRunningTasks.count(sc) < 2 && System.nanoTime() < deadline) Thread.sleep(10)
    assert(SieveRunningTasks.count(sc) == 2)
    RunningTasksSuite.release.countDown()
    Await.result(job, 30.seconds)
    // the scheduler drops a task before its result reaches the job; the status store learns it later, through
    // the listener bus, and writes an executor's count at most every 100 ms
    assert(SieveRunningTasks.count(sc) == 0)
  }
}

object RunningTasksSuite {
  val release = new CountDownLatch(1)
}
