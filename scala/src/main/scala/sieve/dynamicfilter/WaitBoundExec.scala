package sieve.dynamicfilter

import java.util.concurrent.{CompletableFuture, Executors, ScheduledFuture, ThreadFactory, TimeUnit}
import java.util.concurrent.atomic.AtomicReference

import scala.concurrent.{Future, Promise}
import scala.util.control.NonFatal

import org.apache.spark.SparkContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.scheduler.SieveRunningTasks
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, Statistics}
import org.apache.spark.sql.execution.{LeafExecNode, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.adaptive.{QueryStageExec, SieveStageCache}
import org.apache.spark.sql.execution.exchange.BroadcastExchangeLike

/**
 * Bounds a scan's wait for a dynamic filter's keys (under AQE) by what the filter is expected to save. A child
 * of the filter's [[DynamicFilterExec]] beside its creation sides, so the scan's stage waits for it too; an AQE
 * stage of its own (a broadcast of nothing) that completes once the cores the scan would use have stood idle
 * long enough to cost `budget` bytes of reading ([[WaitBound]]) — what the filter saves less its stage's start
 * ([[DynamicFilterBenefit.waitBudget]]). Its completion makes AQE plan again; by then the
 * creation side has run (the filter is placed without a bound: its keys cost no wait) or the wait is spent and
 * [[PlaceDynamicFilters]] declines the filter, so the scan's stage starts without it. Nothing reads its
 * result; the rows and the answer are never its.
 *
 * `scan` names the scan whose wait it bounds (every bound of one scan in one execution reads one clock),
 * `cores` the tasks that scan would run at once (the idle cores beyond those cost it nothing),
 * `bytesPerCoreSecond` what an idle core-second costs (`idleCoreSecondBytes`). `awaits`, the exchanges whose
 * stages the filter waits for, also ends it once AQE has built each: a stage AQE reuses in their place, built
 * already (a subquery's, made by its query), sends this plan no event of its own that would plan it again.
 */
case class WaitBoundExec(scan: String, budget: BigInt, cores: Int, bytesPerCoreSecond: Long,
    child: SparkPlan = NoRowsExec())(@transient val awaits: Seq[SparkPlan] = Nil)
    extends BroadcastExchangeLike {
  // AQE maps each stage back to a logical node: one of its own, found nowhere in the plan (nothing replaced)
  setTagValue(SparkPlan.LOGICAL_PLAN_TAG, LocalRelation(Nil))

  override def output: Seq[Attribute] = Nil

  @transient @volatile private var executionId: Option[String] = None
  // (prepared on the thread that submits the stage, with the query's properties: the future may run elsewhere)
  override protected def doPrepare(): Unit =
    executionId = Option(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))

  @transient private lazy val done = new CompletableFuture[Broadcast[Any]]()
  @transient private lazy val promise = Promise[Broadcast[Any]]()

  // (transient, as BroadcastExchangeExec's: a plan holding this node may go into a task's closure, futures cannot)
  @transient override lazy val relationFuture: java.util.concurrent.Future[Broadcast[Any]] = done

  @transient override protected lazy val completionFuture: Future[Broadcast[Any]] = {
    WaitBound.await(sparkContext, executionId, scan, cores, budget, bytesPerCoreSecond, this, awaits) { () =>
      done.complete(null)
      promise.trySuccess(null)
    }(cancelled = done.isCancelled)
    promise.future
  }

  override def runtimeStatistics: Statistics = Statistics(sizeInBytes = 0, rowCount = Some(0))

  override protected def doExecute(): RDD[InternalRow] =
    throw new UnsupportedOperationException(s"$nodeName bounds a wait; it has no rows")

  override def simpleString(maxFields: Int): String =
    s"WaitBound: $scan waits while its $cores core(s) idle cost less than $budget bytes ($bytesPerCoreSecond a core-second)"

  override protected def otherCopyArgs: Seq[AnyRef] = awaits :: Nil

  override protected def withNewChildInternal(newChild: SparkPlan): WaitBoundExec = copy(child = newChild)(awaits)
}

/** No rows, no columns: the child a [[WaitBoundExec]] must have as an exchange. */
// (a field, even empty: Spark copies plan nodes through a constructor with arguments)
case class NoRowsExec(output: Seq[Attribute] = Nil) extends LeafExecNode {
  override protected def doExecute(): RDD[InternalRow] = sparkContext.emptyRDD[InternalRow]
}

/**
 * The clocks of scans' waits: per execution and scan, the idle core time counted since its first bound's
 * stage started — each tick, the cores of the cluster running no task (at most the scan's), times the time
 * since the last. In bytes of reading at `idleCoreSecondBytes`, that is what the wait has cost so far, asked
 * by the bounds (each completes once it exceeds its budget) and by [[PlaceDynamicFilters]] as AQE plans again.
 */
object WaitBound {
  /** How often the clocks count the idle cores. */
  val TickMillis = 10L

  private final class Clock(val cores: Int) {
    private var last = System.nanoTime()
    private var idleCoreNanos = 0.0
    def tick(sc: SparkContext): Double = synchronized {
      val now = System.nanoTime()
      val running = SieveRunningTasks.count(sc)
      val idle = math.min(math.max(sc.defaultParallelism - running, 0L), cores.toLong)
      idleCoreNanos += idle.toDouble * (now - last)
      last = now
      idleCoreNanos
    }
    def idleNanos: Double = synchronized(idleCoreNanos)
  }

  // bounded: only the clocks of recent executions
  private val clocks = new java.util.LinkedHashMap[(String, String), Clock](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[(String, String), Clock]): Boolean = size() > 256
  }

  private lazy val timer = Executors.newSingleThreadScheduledExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "spark-sieve-wait-bound")
      t.setDaemon(true)
      t
    }
  })

  /** The scan a [[WaitBoundExec]] names: its table and columns (the same across AQE's plans of one query). */
  def keyOf(scan: SparkPlan): String = s"${FilterPlans.nameOf(scan)} #${scan.output.map(_.exprId.id).mkString(",")}"

  private def clock(executionId: String, scan: String, cores: Int): Clock =
    clocks.synchronized(clocks.computeIfAbsent((executionId, scan), _ => new Clock(cores)))

  /** The bytes `scan`'s wait has cost in execution `executionId` so far (None: no bound of it has started). */
  def spent(executionId: Option[String], scan: String, bytesPerCoreSecond: Long): Option[BigInt] =
    executionId.flatMap(id => clocks.synchronized(Option(clocks.get((id, scan)))))
      .map(c => BigInt((c.idleNanos / 1e9 * bytesPerCoreSecond).toLong))

  /** How often a bound asks whether the stages it awaits are built. */
  val BuiltEveryTicks = 10

  /** Calls `complete` once `scan`'s wait has cost `budget` bytes, the stages of `awaits` are built (as the
   * stage cache of the bound `self` says), its execution has ended or `cancelled`. */
  def await(sc: SparkContext, executionId: Option[String], scan: String, cores: Int, budget: BigInt,
      bytesPerCoreSecond: Long, self: SparkPlan, awaits: Seq[SparkPlan])(complete: () => Unit)(
      cancelled: => Boolean): Unit =
    executionId match {
      case None => complete() // not in an execution AQE runs: nothing to bound
      case Some(id) =>
        val c = clock(id, scan, cores)
        val limit = budget.toDouble / math.max(bytesPerCoreSecond, 1L) * 1e9
        val task = new AtomicReference[ScheduledFuture[_]]()
        var ticks = 0
        task.set(timer.scheduleAtFixedRate(() => {
          ticks += 1
          // (a clock that cannot be read ends the wait: a bound never holds a stage back for an error of its own)
          val over = try c.tick(sc) >= limit || cancelled || ended(id) ||
            (ticks % BuiltEveryTicks == 1 && built(id, self, awaits)) catch { case NonFatal(_) => true }
          if (over) {
            complete()
            Option(task.get).foreach(_.cancel(false))
          }
        }, TickMillis, TickMillis, TimeUnit.MILLISECONDS))
    }

  /** Whether AQE has built a stage for each of `awaits` in the cache that holds the stage of `self` (a cached
   * table's plan has a cache of its own; none: not known, so not built). */
  private def built(executionId: String, self: SparkPlan, awaits: Seq[SparkPlan]): Boolean = awaits.nonEmpty &&
    SieveStageCache.of(executionId).exists(cache => cache.holds(self) && awaits.forall {
      case s: QueryStageExec => s.isMaterialized
      case e => cache.find(e).exists(_.isMaterialized)
    })

  private def ended(executionId: String): Boolean =
    scala.util.Try(SQLExecution.getQueryExecution(executionId.toLong) == null).getOrElse(true)
}
