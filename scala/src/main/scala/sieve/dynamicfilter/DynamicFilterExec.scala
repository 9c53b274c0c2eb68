package sieve.dynamicfilter

import java.util.concurrent.TimeUnit.NANOSECONDS

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{CodegenSupport, FileSourceScanExec, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import sieve.config.SieveConf

/**
 * Drops the rows of `child` whose join `keys` cannot match a key of the creation side. `creation` is
 * the join's own creation-side exchange (broadcast or shuffle), made a second child by
 * [[WireDynamicFilters]] so that Spark computes it once for both (exchange reuse) and before this
 * operator runs (AQE: a stage waits for its child stages).
 *
 * At execution, on the driver: the keys are read from that exchange ([[KeyCollector]]) and the filter
 * chosen from their real count; a single-column filter's IN-set (small ones) or range is added to the
 * data filters of the file scan below, so Parquet / ORC skip row groups. Then every row is tested in
 * the generated code of its stage ([[RowKeyTest]]). Under a broadcast join a large key set is tested by
 * its range only: the join's own hash probe is as cheap as ours would be.
 */
case class DynamicFilterExec(
    keys: Seq[Expression],
    child: SparkPlan,
    creation: Option[SparkPlan] = None,
    creationKeys: Seq[Expression] = Nil,
    broadcast: Boolean = false) extends SparkPlan with CodegenSupport {

  override def children: Seq[SparkPlan] = child +: creation.toSeq
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def supportCodegen: Boolean = creation.isDefined
  // Rows only pass through (the creation child is read on the driver, not in the generated loop).
  override def needCopyResult: Boolean = child.asInstanceOf[CodegenSupport].needCopyResult

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numKeys" -> SQLMetrics.createMetric(sparkContext, "keys collected"),
    "inSetKeys" -> SQLMetrics.createMetric(sparkContext, "in-set keys"),
    "bloomBytes" -> SQLMetrics.createSizeMetric(sparkContext, "bloom filter size"),
    "buildTime" -> SQLMetrics.createTimingMetric(sparkContext, "build time"),
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows in"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "passThroughTasks" -> SQLMetrics.createMetric(sparkContext, "pass-through tasks"))

  /** Filled on the driver when this operator executes; referenced by the generated code. */
  @transient private lazy val test =
    new RowKeyTest(SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.get(conf), longMetric("passThroughTasks"))
  @transient @volatile private var chosen: Option[KeyFilter] = None
  @transient @volatile private var pushed: Seq[Expression] = Nil

  def filterDescription: String = (creation, chosen) match {
    case (None, _) => "pass-through (no join exchange to read keys from)"
    case (_, None) => "not executed yet"
    case (_, Some(f)) => f.describe + (if (test.rangeOnly) "; rows tested by range only" else "") +
      (if (pushed.nonEmpty) s"; pushed to scan: ${pushed.map(brief).mkString(", ")}" else "")
  }

  private def brief(e: Expression): String = e match {
    case In(v, list) if list.size > 10 => s"$v IN (${list.size} values)"
    case other => other.sql
  }

  override def simpleString(maxFields: Int): String = {
    val from = if (creation.isEmpty) "unwired" else if (broadcast) "broadcast" else "shuffle"
    s"DynamicFilter ${keys.mkString("[", ", ", "]")} from ${creationKeys.mkString("[", ", ", "]")} ($from)"
  }

  private def longKey: Boolean = keys.size == 1 && KeyShape(keys.map(_.dataType)).asLong.isDefined

  /** Builds the filter (once per execution of this operator) and returns the child to read, with the
   * filter pushed into its scan. */
  private lazy val prepared: SparkPlan = creation match {
    case None => child
    case Some(source) =>
      val filter = build(source)
      test.rangeOnly = broadcast && (filter match {
        case f: InSetFilter => f.size > SieveConf.DYNAMIC_FILTER_PUSHDOWN_IN_SIZE.get(conf).max(65536L)
        case _: BloomKeyFilter => true
        case _ => false
      })
      test.filter = sparkContext.broadcast(filter)
      pushDown(filter)
  }

  override def inputRDDs(): Seq[RDD[InternalRow]] = prepared.asInstanceOf[CodegenSupport].inputRDDs()

  override protected def doProduce(ctx: CodegenContext): String =
    child.asInstanceOf[CodegenSupport].produce(ctx, this)

  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    val keyTest = ctx.addReferenceObj("keyTest", test)
    val (rowsIn, rowsOut) = (metricTerm(ctx, "numInputRows"), metricTerm(ctx, "numOutputRows"))
    ctx.currentVars = input
    val bound = BindReferences.bindReferences(keys, child.output)
    val check = if (longKey) {
      val k = bound.head.genCode(ctx)
      s"""${k.code}
         |if (${k.isNull} || !$keyTest.keepLong((long) ${k.value})) continue;""".stripMargin
    } else {
      val k = GenerateUnsafeProjection.createCode(ctx, bound)
      s"""${k.code}
         |if (${k.value}.anyNull() || !$keyTest.keepRow(${k.value})) continue;""".stripMargin
    }
    s"""
       |$rowsIn.add(1);
       |${evaluateVariables(input)}
       |$check
       |$rowsOut.add(1);
       |${consume(ctx, input)}
     """.stripMargin
  }

  /** Without whole-stage codegen: the same test over rows. */
  override protected def doExecute(): RDD[InternalRow] = {
    val input = prepared.execute()
    if (creation.isEmpty) return input
    val bound = BindReferences.bindReferences(keys, child.output)
    val (keyTest, asLong) = (test, KeyShape(keys.map(_.dataType)).asLong.filter(_ => keys.size == 1))
    val (rowsIn, rowsOut) = (longMetric("numInputRows"), longMetric("numOutputRows"))
    input.mapPartitions(preservesPartitioning = true, f = { rows =>
      val project = UnsafeProjection.create(bound)
      rows.filter { row =>
        rowsIn += 1
        val key = project(row)
        val keep = !key.anyNull && asLong.map(l => keyTest.keepLong(l(key))).getOrElse(keyTest.keepRow(key))
        if (keep) rowsOut += 1
        keep
      }
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
      case f: BloomKeyFilter => longMetric("numKeys") += f.keys; longMetric("bloomBytes") += f.bytes
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
