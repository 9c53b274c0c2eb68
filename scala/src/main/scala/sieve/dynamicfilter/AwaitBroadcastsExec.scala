package sieve.dynamicfilter

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{CodegenSupport, SparkPlan}

/**
 * Holds a partitioned scan's AQE stage back until the broadcasts its dynamic partition pruning reads are
 * built, and does nothing else: its rows are the scan's, passed on in the generated code of its stage. The
 * broadcasts are children, so AQE makes the stage only once they have run (the same exchanges as their
 * joins': one computation, AQE's stage cache).
 * Spark's DPP waits for them inside the stage anyway; waiting before it, AQE plans again with DPP's keys
 * known, and [[PlaceDynamicFilters]] sizes the scan's dynamic filters by the partitions DPP keeps rather than
 * the whole table (TPC-DS q54 partitioned: a filter sized by store_sales made its stage wait for a chain of
 * joins on customers, then DPP kept one month and the filter was dropped: 0.75x vanilla). Placed only under
 * AQE, on a scan that got no filter for that reason.
 */
case class AwaitBroadcastsExec(child: SparkPlan, broadcasts: Seq[SparkPlan]) extends SparkPlan with CodegenSupport {
  override def children: Seq[SparkPlan] = child +: broadcasts
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  // row-based, as DynamicFilterExec: a columnar node here would have its broadcasts wrapped in row-to-columnar
  // transitions; the scan's batches become rows below it, in the same generated code
  override protected def doExecute(): RDD[InternalRow] = child.execute()
  override def needCopyResult: Boolean = child.asInstanceOf[CodegenSupport].needCopyResult
  override def inputRDDs(): Seq[RDD[InternalRow]] = child.asInstanceOf[CodegenSupport].inputRDDs()
  override protected def doProduce(ctx: CodegenContext): String = child.asInstanceOf[CodegenSupport].produce(ctx, this)
  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = consume(ctx, input)

  override def simpleString(maxFields: Int): String =
    s"AwaitBroadcasts: dynamic partition pruning's ${broadcasts.size} broadcast(s) before this stage"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): SparkPlan =
    copy(child = newChildren.head, broadcasts = newChildren.tail)
}
