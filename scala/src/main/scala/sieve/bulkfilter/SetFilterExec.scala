package sieve.bulkfilter

import java.util.concurrent.TimeUnit.NANOSECONDS

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, SortOrder}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{CodegenSupport, SparkPlan, SQLExecution, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import sieve.config.SieveConf
import sieve.exec.RowFilter
import sieve.valueset.ValueSet

/**
 * A [[SetFilter]] at run time. When it first executes, on the driver: its value sets are built from the
 * `textFiles` and the `sources` ([[BuildValueSets]], one job) and broadcast, and the values of the include leaves every row
 * must match are pushed into the file scan below ([[PushIncludesToScan]]); then every row of `child` is
 * tested by the tree's generated code in the child's own stage, as Spark's FilterExec tests a condition.
 */
case class SetFilterExec(condition: TreeCondition, sets: Seq[ValueSetSpec], textFiles: Seq[TextValueFile],
    labels: Seq[String], child: SparkPlan, sources: Seq[SparkPlan]) extends SparkPlan with CodegenSupport {

  override def children: Seq[SparkPlan] = child +: sources
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def needCopyResult: Boolean = child.asInstanceOf[CodegenSupport].needCopyResult

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "setValues" -> SQLMetrics.createMetric(sparkContext, "values in sets"),
    "setBytes" -> SQLMetrics.createSizeMetric(sparkContext, "value set size"),
    "readTime" -> SQLMetrics.createTimingMetric(sparkContext, "value read time"),
    "buildTime" -> SQLMetrics.createTimingMetric(sparkContext, "value set build time"),
    "filesSkipped" -> SQLMetrics.createMetric(sparkContext, "files skipped"),
    "rowGroupsSkipped" -> SQLMetrics.createMetric(sparkContext, "row groups skipped"),
    "rowsSkipped" -> SQLMetrics.createMetric(sparkContext, "rows skipped by the scan"))

  @transient private lazy val holder = {
    // reordering off (spark.sieve.enabled / bulkFilter.enabled): the written order, not adapted either
    val adaptive = BulkFilterOrder.reorderEnabled(conf) && SieveConf.BULK_FILTER_ADAPTIVE_ORDER.get(conf)
    val stats = if (adaptive) Some(new TreeStats(condition.plan.size)) else None
    stats.foreach(sparkContext.register(_, "bulk filter order"))
    new SetFilterExec.BroadcastSets(adaptive, stats)
  }
  @transient @volatile private var built: Seq[ValueSet] = Nil
  @transient @volatile private var pushed: Seq[Expression] = Nil

  def hasRun: Boolean = built.nonEmpty

  /** The sets as built and what was pushed into the scan, for explain. */
  def setsDescription: Seq[String] =
    if (built.isEmpty) sets.map(s => s"${s.column}: not built yet")
    else sets.zip(built).map { case (s, b) => s"${s.column}: ${b.describe}" } ++
      (if (pushed.isEmpty) Nil else Seq(s"pushed to scan: ${pushed.map(_.sql.take(200)).mkString(", ")}"))

  override def simpleString(maxFields: Int): String =
    s"SetFilter $condition on ${sets.map(s => s"${s.column} (${s.labels.size} leaves)").mkString(", ")}"

  /** Builds the sets (once per execution of this operator) and returns the child to read, with the
   * required include leaves pushed into its scan. */
  @transient private lazy val prepared: SparkPlan = {
    val (result, readNs, buildNs) = BuildValueSets(sparkContext, sets, textFiles, sources, conf)
    holder.sets = sparkContext.broadcast(result)
    built = result.toSeq
    longMetric("readTime") += NANOSECONDS.toMillis(readNs)
    longMetric("buildTime") += NANOSECONDS.toMillis(buildNs)
    longMetric("setValues") += result.map(_.size).sum
    longMetric("setBytes") += result.map(_.bytes).sum
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    postDriverMetrics(executionId, "readTime", "buildTime", "setValues", "setBytes")
    val done = PushIncludesToScan(condition, built, child, conf, c => {
      longMetric("filesSkipped").set(c.filesSkipped)
      longMetric("rowGroupsSkipped").set(c.rowGroupsSkipped)
      longMetric("rowsSkipped").set(c.rowsSkipped)
      postDriverMetrics(executionId, "filesSkipped", "rowGroupsSkipped", "rowsSkipped")
    })
    pushed = done.predicates
    done.plan
  }

  private def postDriverMetrics(executionId: String, names: String*): Unit =
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, names.map(metrics))

  private def bound = BindReferences.bindReference(condition.withRuntime(holder), child.output)

  /** What this filter's tasks measured (adaptive order only), summed over its last run. */
  def measured: Option[TreeStats] = holder.stats

  override def inputRDDs(): Seq[RDD[InternalRow]] = prepared.asInstanceOf[CodegenSupport].inputRDDs()

  override protected def doProduce(ctx: CodegenContext): String =
    child.asInstanceOf[CodegenSupport].produce(ctx, this)

  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    ctx.currentVars = input
    val check = bound.genCode(ctx)
    RowFilter.consumeCode(check, None, metricTerm(ctx, "numOutputRows"), consume(ctx, input))
  }

  /** Without whole-stage codegen: the same test over rows. */
  override protected def doExecute(): RDD[InternalRow] =
    RowFilter.filterRows(prepared.execute(), bound, child.output, None, longMetric("numOutputRows"))

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): SetFilterExec =
    copy(child = newChildren.head, sources = newChildren.tail)
}

object SetFilterExec {
  /** The built sets, as tasks find them. */
  final class BroadcastSets(val adaptive: Boolean, val stats: Option[TreeStats]) extends TreeRuntime {
    @volatile var sets: Broadcast[Array[ValueSet]] = _
    def apply(column: Int): ValueSet = sets.value(column)
  }
}

/**
 * A value source of a [[SetFilterExec]], read by its own job: the boundary that gives the source its own
 * generated code (without it, the source would be folded into the filter's stage and read row by row).
 */
case class ValueSourceExec(child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override protected def doExecute(): RDD[InternalRow] = child.execute()
  override protected def withNewChildInternal(newChild: SparkPlan): ValueSourceExec = copy(child = newChild)
}
