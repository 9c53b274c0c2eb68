package sieve.dynamicfilter

import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.exchange.{Exchange, ReusedExchangeExec}
import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.dynamicfilter.FilterPlans._
import sieve.plan.PlanMemo
import sieve.scan.PrunedScanBytes

/**
 * The wait for a filter's keys, in bytes of reading ([[DynamicFilterBenefit]]'s check 1 weighs what a filter saves
 * against it): what the creation side's scans leave idle on the cores before its keys are known, its stages'
 * starts, or the collection of a completed shuffle's keys; and the cores a scan's stage would keep busy
 * ([[WaitBoundExec]] prices its idle time by them).
 */
object KeyWait {
  private def conf: SQLConf = SQLConf.get

  /** What a scan waits for a creation side: `read`, the reading its cores leave idle while the creation side's
   * scans still run before its keys are known ([[idleBytes]]: a scan whose stage would run beside them loses only
   * the cores they leave it), and `start`, its stage's start (`stageStartBytes`) — nothing when the scan's stage
   * waits for it anyway (`probedInStage`: the broadcast join that reads it probes the scan's rows in that stage)
   * or it has run — and `collect`, the bytes of completed shuffle stages that a job reads for its keys (TPC-H q8:
   * orders' 457,263 keys, 0.5-0.8 s; a broadcast's keys are read from its relation on the driver). */
  final case class Wait(read: BigInt, start: Long, collect: BigInt = 0, reads: BigInt = 0, stages: Int = 1) {
    require(stages >= 1)
    def total: BigInt = read + start + collect
    def collectOnly: Boolean = collect > 0 && read == 0 && start == 0
    def describe: String =
      if (collect > 0) s"its keys are collected by a job over the $collect bytes of its completed shuffle stage(s)"
      else s"its creation side reads $reads bytes before they are known, leaving $read bytes of reading idle, " +
        s"+ stageStartBytes (${start / stages})" + (if (stages > 1) s" x $stages stages one after another" else "")
  }

  /** `perRow`: the bytes the target's scan reads per row, when its footers say. */
  def waitBytes(source: KeyCollector.Source, probedInStage: Boolean, perRow: => Option[Double]): Wait =
    source.creation match {
      case _ if probedInStage => Wait(0, 0)
      case c if materialized(c) => Wait(0, 0, if (source.broadcast) 0 else sizeOf(c))
      // keys computed from shuffle stages that have run ([[ComputedKeys]]): a job aggregates their rows again,
      // about what a scan pays for as many rows (a shuffle's bytes are not a Parquet scan's: TPC-H q18, orders'
      // 1.5M partial sums are 72 MB of shuffle, orders' scan 16 MB for as many rows)
      case ComputedKeys(c) if ComputedKeys.shuffles(c).forall(materialized) =>
        val stages = ComputedKeys.shuffles(c)
        val rows = stages.map(KeyCollector.shuffleRows)
        Wait(0, 0, perRow.filter(_ => rows.forall(_.isDefined))
          .map(b => BigDecimal(rows.flatten.sum) * b).map(_.toBigInt).getOrElse(stages.map(sizeOf).sum))
      case c =>
        val (scans, chain) = (toRead(c), math.max(stages(c), 1))
        Wait(scans.map(idleBytes).sum, SieveConf.DYNAMIC_FILTER_STAGE_START_BYTES.get(conf) * chain,
          reads = scans.map(scanBytes).sum, stages = chain)
    }

  /** The scans in `plan` that AQE has not read already (a stage that has run: none). */
  private def toRead(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case s if materialized(s) => Nil
    case s: QueryStageExec => toRead(s.plan)
    case r: ReusedExchangeExec => toRead(r.child)
    case scan if targetable(scan) => Seq(scan)
    case other => other.children.flatMap(toRead)
  }

  /** The stages of `plan` that have not run, the most that run one after another (a stage waits for those it
   * reads): each one's start is waited for. */
  private def stages(plan: SparkPlan): Int = plan match {
    case s if materialized(s) => 0
    case s: QueryStageExec => stages(s.plan)
    case r: ReusedExchangeExec => stages(r.child)
    case e: Exchange => 1 + (e.children.map(stages) :+ 0).max
    case other => (other.children.map(stages) :+ 0).max
  }

  /** The reading a file scan's stage leaves idle on the cluster's cores while it runs: its files split as Spark
   * splits them (`FilePartition.maxSplitBytes`), each task reading its share of the scan's bytes, `cores` tasks
   * at a time; the cores the last wave, or a scan of fewer tasks than cores, leaves free idle for as long (a
   * scan of one small file: all but one). Another scan's stage waiting for it loses that, not the creation
   * side's read, which its cores would share anyway (TPC-DS q95: web_sales' self-join filtered by the orders
   * the outer query keeps, whose filtered scan of 92 MB keeps both cores busy). A scan of another kind: its
   * whole read (its tasks are not known here). */
  private def idleBytes(scan: SparkPlan): BigInt = idleBytesOf(scan)

  // (asked of a creation side's scans for each filter it would feed)
  private val idleBytesOf = new PlanMemo.Memo[SparkPlan, BigInt]({
    case s: FileSourceScanExec =>
      val read = scanBytes(s)
      val (tasks, cores) = (tasksOf(s), BigInt(parallelism(s)))
      val waves = (tasks + cores - 1) / cores
      (read * cores * waves / tasks - read).max(0)
    case other => scanBytes(other)
  })

  /** A file scan's tasks: its files split as Spark splits them (`FilePartition.maxSplitBytes`). */
  private def tasksOf(s: FileSourceScanExec): BigInt = {
    val files = BigInt(PrunedScanBytes.relationBytes(s.relation).max(1L))
    val cores = BigInt(parallelism(s))
    val split = BigInt(conf.filesMaxPartitionBytes).min(BigInt(conf.filesOpenCostInBytes).max((files + cores - 1) / cores))
    ((files + split - 1) / split).max(1)
  }

  /** The cores `scan`'s stage would keep busy: a file scan's tasks, at most the cluster's cores for a scan. */
  def coresOf(scan: SparkPlan): Int = scan match {
    case s: FileSourceScanExec => tasksOf(s).min(parallelism(s)).toInt
    case _ => math.max(1, conf.getConf(SQLConf.LEAF_NODE_DEFAULT_PARALLELISM).getOrElse(
      org.apache.spark.sql.SparkSession.getActiveSession.map(_.sparkContext.defaultParallelism).getOrElse(1)))
  }

  /** The tasks a file scan runs at once: Spark's minimum of partitions for a file scan (`FilePartition`). */
  private def parallelism(s: FileSourceScanExec): Int =
    math.max(1, conf.filesMinPartitionNum.getOrElse(
      conf.getConf(SQLConf.LEAF_NODE_DEFAULT_PARALLELISM).getOrElse(s.relation.sparkSession.sparkContext.defaultParallelism)))
}
