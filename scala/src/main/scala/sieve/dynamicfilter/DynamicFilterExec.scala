package sieve.dynamicfilter

import java.util.concurrent.TimeUnit.NANOSECONDS

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import sieve.config.SieveConf

/**
 * Drops the rows of `child` whose join `keys` cannot match a key of the creation side. `creation` is
 * the join's own creation-side exchange (broadcast or shuffle), made a second child by
 * [[WireDynamicFilters]] so that Spark computes it once for both (exchange reuse) and before this
 * operator runs (AQE: a stage waits for its child stages). Unwired (no such join found), it passes
 * every row through.
 *
 * At execution: the keys are read from that exchange ([[KeyCollector]]), the filter chosen from their
 * real count; a single-column filter's IN-set (small ones) or range is added to the data filters of
 * the file scan below, so Parquet / ORC skip row groups; then every row is tested. A task whose
 * first rows mostly pass stops testing (`maxPassRatio`): there the join drops the same rows anyway.
 */
case class DynamicFilterExec(
    keys: Seq[Expression],
    child: SparkPlan,
    creation: Option[SparkPlan] = None,
    creationKeys: Seq[Expression] = Nil,
    broadcast: Boolean = false) extends SparkPlan {

  override def children: Seq[SparkPlan] = child +: creation.toSeq
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numKeys" -> SQLMetrics.createMetric(sparkContext, "keys collected"),
    "inSetKeys" -> SQLMetrics.createMetric(sparkContext, "in-set keys"),
    "bloomBytes" -> SQLMetrics.createSizeMetric(sparkContext, "bloom filter size"),
    "buildTime" -> SQLMetrics.createTimingMetric(sparkContext, "build time"),
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows in"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "passThroughTasks" -> SQLMetrics.createMetric(sparkContext, "pass-through tasks"))

  /** What was chosen, once executed (explain and `spark_sieve.explain` show it). */
  @transient @volatile private var chosen: Option[KeyFilter] = None
  @transient @volatile private var pushed: Seq[Expression] = Nil

  def filterDescription: String = (creation, chosen) match {
    case (None, _) => "pass-through (no join exchange to read keys from)"
    case (_, None) => "not executed yet"
    case (_, Some(f)) => f.describe + (if (pushed.nonEmpty) s"; pushed to scan: ${pushed.mkString(", ")}" else "")
  }

  override def simpleString(maxFields: Int): String = {
    val from = if (creation.isEmpty) "unwired" else if (broadcast) "broadcast" else "shuffle"
    s"DynamicFilter ${keys.mkString("[", ", ", "]")} from ${creationKeys.mkString("[", ", ", "]")} ($from)"
  }

  override protected def doExecute(): RDD[InternalRow] = creation match {
    case None => child.execute()
    case Some(source) =>
      val filter = build(source)
      val input = pushDown(filter)
      val bound = BindReferences.bindReferences(keys, child.output)
      val maxPass = SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.get(conf)
      val shared = sparkContext.broadcast(filter)
      val (rowsIn, rowsOut, passThrough) = (longMetric("numInputRows"), longMetric("numOutputRows"),
        longMetric("passThroughTasks"))
      input.execute().mapPartitions(preservesPartitioning = true, f = { rows =>
        new FilteringIterator(rows, UnsafeProjection.create(bound), shared.value, maxPass, rowsIn, rowsOut, passThrough)
      })
  }

  private def build(source: SparkPlan): KeyFilter = {
    val start = System.nanoTime()
    val limits = KeyCollector.Limits(
      SieveConf.DYNAMIC_FILTER_MAX_IN_SET_SIZE.get(conf), SieveConf.DYNAMIC_FILTER_MAX_KEY_BYTES.get(conf),
      SieveConf.DYNAMIC_FILTER_MAX_BLOOM_BYTES.get(conf), SieveConf.DYNAMIC_FILTER_BLOOM_FPP.get(conf))
    val filter = KeyCollector.collect(source, creationKeys, broadcast, limits).getOrElse(PassThrough)
    chosen = Some(filter)
    longMetric("buildTime") += NANOSECONDS.toMillis(System.nanoTime() - start)
    filter match {
      case f: InSetFilter => longMetric("numKeys") += f.size; longMetric("inSetKeys") += f.size
      case f: BloomKeyFilter => longMetric("bloomBytes") += f.bytes
      case _ =>
    }
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId,
      Seq("numKeys", "inSetKeys", "bloomBytes", "buildTime").map(metrics))
    filter
  }

  /** `child` with the filter's IN-set or range added to the data filters of the file scan that
   * produces the (single, plain column) key, so the reader skips what cannot match. */
  private def pushDown(filter: KeyFilter): SparkPlan = keys match {
    case Seq(key: Attribute) =>
      val inLimit = SieveConf.DYNAMIC_FILTER_PUSHDOWN_IN_SIZE.get(conf)
      val predicates = filter match {
        case EmptyKeyFilter => Seq(Literal(false))
        case f => f.inLiterals(key.dataType, inLimit).map(vs => Seq(In(key, vs))).getOrElse(Nil) ++
          f.range.toSeq.flatMap { case (lo, hi) =>
            Seq(GreaterThanOrEqual(key, Literal(KeyFilter.fromLong(lo, key.dataType), key.dataType)),
              LessThanOrEqual(key, Literal(KeyFilter.fromLong(hi, key.dataType), key.dataType)))
          }
      }
      if (predicates.isEmpty) child
      else child.transformUp {
        case scan: FileSourceScanExec if scan.output.exists(_.exprId == key.exprId) =>
          val onScan = predicates.map(_.transform { case a: Attribute if a.exprId == key.exprId =>
            scan.output.find(_.exprId == key.exprId).get })
          pushed = onScan
          scan.copy(dataFilters = scan.dataFilters ++ onScan)
      }
    case _ => child
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): DynamicFilterExec =
    copy(child = newChildren.head, creation = newChildren.lift(1))
}

/** Tests each row's keys; NULL keys never join. After `Probe` rows, a task whose filter kept more
 * than `maxPass` of them passes the rest through. */
private final class FilteringIterator(
    rows: Iterator[InternalRow], project: UnsafeProjection, filter: KeyFilter, maxPass: Double,
    rowsIn: SQLMetric, rowsOut: SQLMetric, passThrough: SQLMetric) extends Iterator[InternalRow] {
  private val Probe = 100000L
  private var seen = 0L
  private var kept = 0L
  private var filtering = filter ne PassThrough
  private var nextRow: InternalRow = _

  override def hasNext: Boolean = {
    while (nextRow == null && rows.hasNext) {
      val row = rows.next()
      seen += 1
      if (!filtering || matches(row)) { kept += 1; nextRow = row }
      if (filtering && seen == Probe && kept > maxPass * seen) { filtering = false; passThrough += 1 }
    }
    if (nextRow == null) { rowsIn += seen; rowsOut += kept; seen = 0; kept = 0 }
    nextRow != null
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException
    val row = nextRow
    nextRow = null
    row
  }

  private def matches(row: InternalRow): Boolean = {
    val key = project(row)
    !key.anyNull && filter.mightContain(key)
  }
}
