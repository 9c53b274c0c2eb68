package sieve.dynamicfilter

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.jdk.CollectionConverters._

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral, JavaCode}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{CodegenSupport, SparkPlan, SQLExecution}
import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import sieve.config.SieveConf
import sieve.exec.RowFilter
import sieve.keyset._
import sieve.dynamicfilter.DynamicFilterExec.Prepared
import sieve.scan.{KeyPrunedFileIndex, KeyScanPushdown, PrunedScanBytes}

/**
 * Drops the rows of `child` (a file scan or a cached table, with its own filters) that a join above would
 * drop: each of its [[KeyFilter]]s keeps a row only if the row's keys may match a key of one of the filter's
 * creation sides — the exchanges (broadcast or shuffle) its joins read their creation side from. The
 * exchanges are children here, so Spark computes each once for the join and the filter (exchange reuse,
 * AQE's stage cache) and before this operator runs (AQE: a stage waits for its child stages).
 * [[PlaceDynamicFilters]] puts every join's filter on a scan into this one operator.
 *
 * At execution, on the driver, filter by filter (cheapest keys first): whether it still pays is asked of
 * [[DynamicFilterBenefit]] — the scan's size once DPP has run, what a broadcast's key range alone says it
 * keeps, whether its shuffle stage's rows outnumber those expected to reach it — then its keys are read from
 * its exchanges ([[KeyCollector]]), its test chosen from their real count, and asked again what it keeps
 * against the scan's footers. A single-column filter's IN-set or ranges go into the file scan's data filters
 * (Parquet / ORC skip row groups; footers are read to skip files). Every row is then tested in the generated
 * code of its stage ([[RowKeyTest]]), several filters in the order of their pass rates measured in each task
 * ([[KeyTestOrder]]). With `sameStageRowTest` off, a filter fed only by broadcast joins that probe these rows
 * in this stage (`probedInStage`) is pushed into the scan but not tested per row: those joins drop the same
 * rows in the same loop at the cost of one probe each — unless another join probes a key row
 * ([[EquiJoin.rowProbe]]) first, which a test per row spares for each row it drops.
 */
case class DynamicFilterExec(child: SparkPlan, filters: Seq[KeyFilter]) extends SparkPlan with CodegenSupport {
  require(filters.nonEmpty && filters.forall(_.sources.nonEmpty))

  /** The creation sides, filter by filter: this operator's children after `child`. */
  def creations: Seq[SparkPlan] = filters.flatMap(_.sources.map(_.creation))

  /** The bounds of filters' waits for their creation sides ([[WaitBoundExec]]): the children after them. */
  def bounds: Seq[SparkPlan] = filters.flatMap(_.bound)

  override def children: Seq[SparkPlan] = child +: (creations ++ bounds)
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  // Rows only pass through (the creation children are read on the driver, not in the generated loop).
  override def needCopyResult: Boolean = child.asInstanceOf[CodegenSupport].needCopyResult

  def filterCount: Int = filters.size

  /** This operator with one more filter, of `filterKeys`, fed by `sources` (see [[KeyFilter]]). */
  def and(filterKeys: Seq[Expression], sources: Seq[KeyCollector.Source], probedInStage: Boolean,
      minScanBytes: Long, bound: Option[SparkPlan] = None): DynamicFilterExec =
    copy(filters = filters :+ KeyFilter(filterKeys, sources, probedInStage, minScanBytes, bound))

  /** This operator without filter `f` (the child alone when it was the only one). */
  def without(f: Int): SparkPlan = if (filterCount == 1) child else copy(filters = filters.patch(f, Nil, 1))

  /** Whether a filter of `filterKeys` fed by exactly `sources` is here already (a rule that runs twice adds
   * nothing). */
  def has(filterKeys: Seq[Expression], sources: Seq[SparkPlan]): Boolean = filters.exists { f =>
    f.keys.size == filterKeys.size && f.keys.zip(filterKeys).forall { case (a, b) => a.semanticEquals(b) } &&
      f.sources.size == sources.size && f.sources.zip(sources).forall { case (s, c) => s.creation.sameResult(c) }
  }

  // The filters' keys are not constructor arguments of their own (QueryPlan.mapExpressions does not reach into
  // a KeyFilter): canonical here as Spark makes them, for exchange reuse of the copies a filter is put in.
  override protected def doCanonicalize(): SparkPlan = {
    val input = AttributeSeq(children.flatMap(_.output))
    def normal(keys: Seq[Expression]) = keys.map(QueryPlan.normalizeExpressions(_, input))
    DynamicFilterExec(child.canonicalized, filters.map(f => f.copy(keys = normal(f.keys),
      sources = f.sources.map(s => s.copy(creation = s.creation.canonicalized, keys = normal(s.keys))),
      bound = f.bound.map(_.canonicalized))))
  }

  /** The name of filter `i`'s metric `name` (every filter has its own). */
  def metricName(name: String, i: Int): String = DynamicFilterMetrics.name(name, i)

  override lazy val metrics: Map[String, SQLMetric] = DynamicFilterMetrics(sparkContext, filterCount)

  private def m(name: String, i: Int): SQLMetric = longMetric(metricName(name, i))

  /** Filled on the driver when this operator executes; referenced by the generated code. */
  @transient private lazy val tests = (0 until filterCount).map { i =>
    // (every row tested under the testing switch: no task passes its rows through)
    new RowKeyTest(if (SieveConf.placeEveryFilter(conf)) 1.0 else maxPassRatio, m("passThroughTasks", i),
      m("rowsTested", i), m("rowsKept", i))
  }

  /** What filter `i` chose, pushed and skipped, once this operator has run. */
  def filterDescription(i: Int): String =
    done.map(_.outcomes.getOrElse(i, FilterOutcome()).describe).getOrElse("not executed yet")

  def describeFilter(f: Int): String = filters(f).toString

  /** The key set filter `i` kept rows by, once this operator has run (none: not run, or dropped). */
  def keptKeys(i: Int): Option[KeySet] =
    done.flatMap(_.outcomes.get(i)).filter(_.dropped.isEmpty).flatMap(_.chosen)

  /** The creation sides feeding filter `f`. */
  def sources(f: Int): Seq[KeyCollector.Source] = filters(f).sources

  /** Filter `f`'s keys over the child's rows. */
  def filterKeys(f: Int): Seq[Expression] = filters(f).keys

  override def simpleString(maxFields: Int): String =
    s"DynamicFilter ${(0 until filterCount).map(describeFilter).mkString(" AND ")}"

  /** Builds the filters (once per execution of this operator): the child to read, with the filters pushed
   * into its scan, and what became of each filter. */
  @transient private lazy val prepared: Prepared = {
    val start = System.nanoTime()
    val p = buildOrder.foldLeft(Prepared(child, Map.empty))(prepare)
    prepareNs = System.nanoTime() - start
    postDriverTime()
    done = Some(p)
    p
  }
  // the driver's time for this operator: preparing (above) and each filter's listing under its keys after it
  @transient @volatile private var prepareNs = 0L
  @transient private lazy val listNs = new Array[Long](filterCount)

  private def postDriverTime(): Unit = {
    longMetric("driverTime").set(NANOSECONDS.toMillis(prepareNs + listNs.sum))
    postDriverMetrics(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY), "driverTime")
  }
  // the prepared result once there (explain asks without preparing)
  @transient @volatile private var done: Option[Prepared] = None

  // Spark prepares a plan before it runs it, and a stage's code is generated after: the filters built
  // here first, a filter not tested per row generates no code (explain's codegen, without a prepare,
  // shows every test)
  override protected def doPrepare(): Unit = prepared

  /** The filters in the order they are built: those whose keys are cheap to read first (broadcasts, then
   * shuffle stages by their row counts, unknown counts last), so that what they are expected to keep tells
   * whether a costlier one's keys are worth collecting ([[DynamicFilterBenefit.outnumbered]]). */
  private def buildOrder: Seq[Int] = (0 until filterCount).sortBy { i =>
    if (sources(i).forall(_.broadcast)) 0L else KeyCollector.creationRows(sources(i)).getOrElse(Long.MaxValue)
  }

  /** `so.far` with filter `i` built and pushed into its plan (or dropped). */
  private def prepare(so: Prepared, i: Int): Prepared = {
    def dropping(o: FilterOutcome, reason: String): Prepared = {
      drop(i, reason)
      so.copy(outcomes = so.outcomes + (i -> o.copy(dropped = Some(reason))))
    }
    def declined(d: Decision, o: FilterOutcome = FilterOutcome()) = d match {
      case DynamicFilterBenefit.Decline(reason, _) => Some(reason -> o)
      case _ => None
    }
    // asked in order, each only if the one before places the filter
    declined(smallAfterDpp(i))
      .orElse(unbuiltKeep(i).flatMap { case (keep, d) => declined(d, FilterOutcome(expected = Some(keep))) })
      .orElse(declined(outnumbered(i, so))) match {
      case Some((reason, o)) => dropping(o, reason)
      case None =>
        val filter = build(i)
        val keep = footerGroups(i, filter).flatMap(KeepEstimate(filter, _))
        tests(i).expectedKeep = keep
        val built = FilterOutcome(chosen = Some(filter), expected = keep)
        keep.map(k => DynamicFilterBenefit.keeps(k, k => f"expected to keep ${k * 100}%.0f%% of its rows (the keys " +
            "against the key column's values in the scan's footers)")).getOrElse(DynamicFilterBenefit.Place) match {
          case DynamicFilterBenefit.Decline(reason, _) => dropping(built, reason)
          case _ if repeatsJoins(i) && (filter ne EmptyKeySet) =>
            val joins = if (sources(i).size > 1) "the broadcast joins it reads probe" else "the broadcast join it reads probes"
            pushDown(so, i, filter, built.copy(untested =
              Some(s"$joins each of these rows in this stage: a test per row would only repeat that probe")))
          case _ =>
            tests(i).filter = sparkContext.broadcast(filter)
            pushDown(so, i, filter, built)
        }
    }
  }

  /** Filter `i` dropped before its keys are collected when its creation sides are shuffle stages holding more
   * rows than are expected to reach it ([[DynamicFilterBenefit.outnumbered]]): the scan's rows (its footers)
   * times what the filters built before it are expected to keep. Without AQE nothing is known and every filter
   * is built. */
  private def outnumbered(i: Int, so: Prepared): Decision =
    (for {
      creationRows <- KeyCollector.creationRows(sources(i)) // (None with a broadcast source)
      scanRows <- footerRows(i)
    } yield DynamicFilterBenefit.outnumbered(creationRows, scanRows,
      so.outcomes.values.collect { case o if o.dropped.isEmpty => o.expected }.flatten.toSeq))
      .getOrElse(DynamicFilterBenefit.Place)

  /** The scan's rows by its footers, read for another filter's key column or else for one of filter `i`'s. */
  private def footerRows(i: Int): Option[Long] = {
    val read = rowGroupsByKey.values.iterator.asScala.collectFirst { case Some(groups) => groups }
    read.orElse(filterKeys(i).flatMap(_.references).iterator.map(scanRowGroups).collectFirst { case Some(g) => g })
      .flatMap(KeyScanPushdown.scanRows(child, _, SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf)))
  }

  private def maxPassRatio: Double = SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.get(conf)

  /** What filter `i` is expected to keep before its keys are collected, and whether that pays
   * ([[DynamicFilterBenefit.keeps]]), when its sources are broadcasts of one long-valued key whose count and
   * range alone, against the scan's footers, say so (collecting a dimension's every key into a set costs the
   * driver more than the pass over them that shows it). */
  private def unbuiltKeep(i: Int): Option[(Double, Decision)] = filterKeys(i) match {
    case Seq(key: Attribute) if sources(i).forall(_.broadcast) =>
      val start = System.nanoTime()
      def range = try KeyCollector.broadcastRange(sources(i))
        finally m("buildTime", i) += NANOSECONDS.toMillis(System.nanoTime() - start)
      for {
        groups <- scanRowGroups(key)
        keys <- range if keys.rows > 0
        keep <- KeepEstimate.of(keys.rows.toDouble, keys.min, keys.max, groups)
      } yield keep -> DynamicFilterBenefit.keeps(keep, k => f"expected to keep ${k * 100}%.0f%% of its rows (its " +
        s"${keys.rows} keys in [${keys.min}, ${keys.max}] against the key column's values in the scan's footers; not collected)")
    case _ => None
  }

  // what the scan reads once DPP has run (None: no DPP on it), asked once for every filter
  @transient private lazy val keptByDpp = KeyScanPushdown.scanBelow(child).flatMap(PrunedScanBytes(_))

  /** Filter `i` dropped before its keys are collected if the scan reads less than it must for the filter to
   * pay once dynamic partition pruning has run (the planner sized it by the whole table). */
  private def smallAfterDpp(i: Int): Decision = {
    val least = filters(i).minScanBytes
    if (least <= 0) DynamicFilterBenefit.Place
    else keptByDpp.map(DynamicFilterBenefit.afterDpp(_, DynamicFilterBenefit.floor(least), "the scan"))
      .getOrElse(DynamicFilterBenefit.Place)
  }

  /** Filter `i` dropped before the scan: not pushed, not tested (no code). */
  private def drop(i: Int, reason: String): Unit = {
    m("droppedBeforeScan", i) += 1
    postDriverMetrics(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY), metricName("droppedBeforeScan", i))
  }

  /** Whether filter `i`'s row test would only repeat the probes of the broadcast joins it reads, in this
   * stage (pushed into the scan, it still skips what the scan's statistics rule out): a test per row (an
   * in-set or a bloom filter) costs more than a broadcast join's probe of a dense long array, and it adds,
   * not replaces (bench/RESULTS.md: TPC-DS q3 / q42 / q52 / q55). */
  private def repeatsJoins(i: Int): Boolean =
    filters(i).probedInStage && !SieveConf.sameStageRowTest(conf)

  // the key column's row groups in the scan's footers, listed and sampled once per column: a filter asks
  // before its keys are collected and again after
  @transient private lazy val rowGroupsByKey =
    new java.util.concurrent.ConcurrentHashMap[ExprId, Option[Seq[KeyPrunedFileIndex.RowGroup]]]()

  private def scanRowGroups(key: Attribute): Option[Seq[KeyPrunedFileIndex.RowGroup]] =
    rowGroupsByKey.computeIfAbsent(key.exprId,
      _ => KeyScanPushdown.rowGroups(child, key, SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf), conf))

  /** The key column's row groups in the scan's footers, when filter `i` is single-column and could use
   * them to estimate what it keeps ([[KeepEstimate]]). */
  private def footerGroups(i: Int, filter: KeySet): Option[Seq[KeyPrunedFileIndex.RowGroup]] = filterKeys(i) match {
    case Seq(key: Attribute) if KeepEstimate.distinctKeys(filter).isDefined =>
      scanRowGroups(key)
    case _ => None
  }

  override def inputRDDs(): Seq[RDD[InternalRow]] = prepared.plan.asInstanceOf[CodegenSupport].inputRDDs()

  override protected def doProduce(ctx: CodegenContext): String =
    child.asInstanceOf[CodegenSupport].produce(ctx, this)

  private def check(i: Int): KeySetContains =
    KeySetContains(tests(i), BindReferences.bindReferences(filterKeys(i), child.output))

  // The columns read here are the keys of the filters tested per row only (a filter left to the joins
  // reads none: its column is read as vanilla Spark reads it, a probe side's second key only for the rows
  // the first join kept)
  override def usedInputs: AttributeSet = AttributeSet.empty

  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    val live = testedPerRow
    if (live.isEmpty) consume(ctx, input) // nothing to test: no code, no count
    else {
      ctx.currentVars = input
      // read at the top, once, as FilterExec reads a predicate's columns: a read inside a test's branch
      // would leave the column undeclared for the operators above
      val read = evaluateRequiredVariables(child.output, input, AttributeSet(live.flatMap(filterKeys).flatMap(_.references)))
      val test = testCode(ctx, live)
      RowFilter.consumeCode(test.copy(code = code"$read" + test.code), Some(metricTerm(ctx, "numInputRows")),
        metricTerm(ctx, "numOutputRows"), consume(ctx, input))
    }
  }

  /** The tests of filters `live` on the current row, in the order [[KeyTestOrder]] keeps when several. */
  private def testCode(ctx: CodegenContext, live: Seq[Int]): ExprCode =
    if (live.size == 1) check(live.head).genCode(ctx)
    else {
      val order = ctx.addReferenceObj("keyTestOrder", new KeyTestOrder(live.map(tests).toArray),
        classOf[KeyTestOrder].getName)
      val keep = ctx.freshName("keep")
      val (ord, j) = (ctx.freshName("order"), ctx.freshName("j"))
      val cases = live.zipWithIndex.map { case (f, i) =>
        val e = check(f).genCode(ctx)
        s"case $i: { ${e.code} $keep = ${e.value}; break; }"
      }
      ExprCode(
        code"""int[] $ord = $order.order();
              |boolean $keep = true;
              |for (int $j = 0; $keep && $j < $ord.length; $j++) {
              |  switch ($ord[$j]) { ${cases.mkString("\n")} }
              |}""".stripMargin,
        FalseLiteral, JavaCode.variable(keep, classOf[Boolean]))
    }

  /** The filters whose tests run per row: all but those dropped or left to the joins once built. */
  private def testedPerRow: Seq[Int] = (0 until filterCount).filterNot(i =>
    done.flatMap(_.outcomes.get(i)).exists(o => o.dropped.isDefined || o.untested.isDefined))

  /** Whether the rows pass through untouched and uncounted: no filter tested per row. */
  def passesRows: Boolean = testedPerRow.isEmpty

  /** Without whole-stage codegen: the same tests over rows. */
  override protected def doExecute(): RDD[InternalRow] = {
    val rows = prepared.plan.execute()
    if (passesRows) rows
    else RowFilter.filterRows(rows, testedPerRow.map(check).reduce[Expression](And), child.output,
      Some(longMetric("numInputRows")), longMetric("numOutputRows"))
  }

  private def build(i: Int): KeySet = {
    val start = System.nanoTime()
    val limits = KeyCollector.Limits.from(conf)
    val executionId = Option(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))
    val filter = KeyCollector.collectOnce(executionId, sources(i), limits).getOrElse(PassThrough)
    m("buildTime", i) += NANOSECONDS.toMillis(System.nanoTime() - start)
    filter match {
      case f: InSetKeys => m("numKeys", i) += f.size; m("inSetKeys", i) += f.size
      case f: BloomKeys => m("numKeys", i) += f.keys; m("filterBytes", i) += f.bytes
      case f: BitmapKeys => m("numKeys", i) += f.keys; m("filterBytes", i) += f.bytes
      case _ =>
    }
    postDriverMetrics(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY),
      Seq("numKeys", "inSetKeys", "filterBytes", "buildTime").map(metricName(_, i)): _*)
    filter
  }

  /** Metrics set on the driver reach the UI only when posted, under the query's execution id. */
  private def postDriverMetrics(executionId: String, names: String*): Unit =
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, names.map(metrics))

  /** `so` with filter `i` pushed into its plan's scan ([[KeyScanPushdown]]) and `o` its outcome; footer counts
   * become metrics. */
  private def pushDown(so: Prepared, i: Int, filter: KeySet, o: FilterOutcome): Prepared = filterKeys(i) match {
    case Seq(key: Attribute) =>
      val limits = KeyScanPushdown.Limits.from(conf)
      val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
      val (pushedPlan, pushed) = KeyScanPushdown(so.plan, key, filter, limits, conf, c => {
        m("filesSkipped", i).set(c.filesSkipped)
        m("rowGroupsSkipped", i).set(c.rowGroupsSkipped)
        m("rowsSkipped", i).set(c.rowsSkipped)
        m("footerTime", i).set(NANOSECONDS.toMillis(c.timeNs))
        postDriverMetrics(executionId, Seq("filesSkipped", "rowGroupsSkipped", "rowsSkipped", "footerTime")
          .map(metricName(_, i)): _*)
        if (c.listNs > 0) { listNs(i) = c.listNs; postDriverTime() }
      })
      Prepared(pushedPlan, so.outcomes + (i -> o.copy(pushed = pushed.predicates, pruning = pushed.pruning)))
    case _ => so.copy(outcomes = so.outcomes + (i -> o))
  }

  /** This operator reading `newCreations` instead of its creation sides (a copy: no tags of its own). */
  def withCreations(newCreations: Seq[SparkPlan]): DynamicFilterExec =
    withNewChildrenInternal((child +: (newCreations ++ bounds)).toIndexedSeq)

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): DynamicFilterExec = {
    val rest = newChildren.tail.iterator
    val fed = filters.map(f => f.copy(sources = f.sources.map(_.copy(creation = rest.next()))))
    copy(child = newChildren.head, filters = fed.map(f => f.copy(bound = f.bound.map(_ => rest.next()))))
  }
}

object DynamicFilterExec {
  /** An operator of one filter, on `child`'s `keys`, fed by `sources` (see [[KeyFilter]]). */
  def apply(child: SparkPlan, keys: Seq[Expression], sources: Seq[KeyCollector.Source], probedInStage: Boolean,
      minScanBytes: Long, bound: Option[SparkPlan]): DynamicFilterExec =
    DynamicFilterExec(child, Seq(KeyFilter(keys, sources, probedInStage, minScanBytes, bound)))

  /** The child to read, the filters pushed into its scan, and each filter's outcome. */
  private final case class Prepared(plan: SparkPlan, outcomes: Map[Int, FilterOutcome])
}
