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
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import sieve.config.SieveConf
import sieve.exec.RowFilter
import sieve.keyset._
import sieve.scan.{KeyPrunedFileIndex, KeyScanPushdown, PrunedScanBytes}

/**
 * Drops the rows of `child` (a file scan or a cached table, with its own filters) that a join above
 * would drop: each creation side `i` — the exchange (broadcast or shuffle) a join reads its creation side
 * from, with that join's keys `creationKeys(i)` — feeds filter `filterOf(i)`, which keeps a row only if
 * its `keys(i)` (over the child's rows) may match a key of one of the creation sides feeding it. A filter
 * usually has one creation side; several when the scan sits in an exchange computed once for several
 * joins ([[SharedExchangeFilters]]): each of them drops the rows none of them keeps. The exchanges are
 * children here, so Spark computes each once for the join and the
 * filter (exchange reuse, AQE's stage cache) and before this operator runs (AQE: a stage waits for its
 * child stages). [[PlaceDynamicFilters]] puts every join's filter on a scan into this one operator.
 *
 * At execution, on the driver: each filter's keys are read from its exchange ([[KeyCollector]]) and its
 * test chosen from their real count; a single-column filter's IN-set (small ones) or ranges are added to
 * the data filters of the file scan below, so Parquet / ORC skip row groups, and Parquet footers are read
 * to skip files. A filter on a scan that DPP prunes is first sized again by the files DPP keeps
 * ([[PrunedScanBytes]]) against `minScanBytes` (the planner sized it by the whole table): below, it is
 * dropped before its keys are collected. Then every row is tested in the generated code of its stage ([[RowKeyTest]]). Several
 * filters are tested in the order of their pass rates measured
 * in each task ([[KeyTestOrder]]). A filter dropped before the scan does nothing: one expected to keep
 * nearly every row. With `sameStageRowTest` off, a filter fed only by broadcast joins that probe these
 * rows in this stage (`probedInStage`: only projections, filters, unions and other hash joins' probe sides
 * between) is pushed into the scan but not tested per row: those joins drop the same rows in the same
 * loop, each at the cost of one probe, which a test per row would only add to — unless one of those other
 * joins probes a key row ([[EquiJoin.rowProbe]]: built, hashed and compared byte by byte) first: a test
 * spares it that probe for each row it drops (TPC-DS q24: store_sales' rows probe store_returns' (ticket,
 * item) before store's and item's keys; q49: sales' before the date's).
 */
case class DynamicFilterExec(
    child: SparkPlan,
    keys: Seq[Seq[Expression]],
    creationKeys: Seq[Seq[Expression]],
    picks: Seq[Seq[Int]],
    broadcast: Seq[Boolean],
    probedInStage: Seq[Boolean],
    minScanBytes: Seq[Long],
    creations: Seq[SparkPlan],
    filterOf: Seq[Int]) extends SparkPlan with CodegenSupport {
  require(keys.size == creations.size && creationKeys.size == creations.size && picks.size == creations.size &&
    broadcast.size == creations.size &&
    probedInStage.size == creations.size && minScanBytes.size == creations.size && filterOf.size == creations.size &&
    filterOf.distinct.sorted == (0 until filterOf.distinct.size))

  override def children: Seq[SparkPlan] = child +: creations
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  // Rows only pass through (the creation children are read on the driver, not in the generated loop).
  override def needCopyResult: Boolean = child.asInstanceOf[CodegenSupport].needCopyResult

  def filterCount: Int = if (filterOf.isEmpty) 0 else filterOf.max + 1

  /** The creation sides feeding filter `f`. */
  def sourcesOf(f: Int): Seq[Int] = creations.indices.filter(filterOf(_) == f)

  /** This operator with one more filter, of `filterKeys`, fed by `sources`; `probedInStage`: a broadcast whose
   * join probes each of this operator's rows in its stage (see the class doc); `minScanBytes`: what the
   * scan must read for the filter to pay (0: its size does not decide), checked again once dynamic
   * partition pruning has run. */
  def and(filterKeys: Seq[Expression], sources: Seq[KeyCollector.Source], probedInStage: Boolean,
      minScanBytes: Long): DynamicFilterExec =
    copy(keys = keys ++ sources.map(_ => filterKeys), creationKeys = creationKeys ++ sources.map(_.keys),
      picks = picks ++ sources.map(_.picks),
      broadcast = broadcast ++ sources.map(_.broadcast), probedInStage = this.probedInStage ++ sources.map(_ => probedInStage),
      minScanBytes = this.minScanBytes ++ sources.map(_ => minScanBytes),
      creations = creations ++ sources.map(_.creation), filterOf = filterOf ++ sources.map(_ => filterCount))

  /** This operator without filter `f` (the child alone when it was the only one). */
  def without(f: Int): SparkPlan = {
    val kept = creations.indices.filterNot(filterOf(_) == f)
    if (kept.isEmpty) child
    else copy(keys = kept.map(keys), creationKeys = kept.map(creationKeys), picks = kept.map(picks),
      broadcast = kept.map(broadcast),
      probedInStage = kept.map(probedInStage), minScanBytes = kept.map(minScanBytes), creations = kept.map(creations),
      filterOf = kept.map(i => if (filterOf(i) > f) filterOf(i) - 1 else filterOf(i)))
  }

  /** Whether a filter of `filterKeys` fed by exactly `sources` is here already (a rule that runs twice adds
   * nothing). */
  def has(filterKeys: Seq[Expression], sources: Seq[SparkPlan]): Boolean = (0 until filterCount).exists { f =>
    val from = sourcesOf(f)
    this.filterKeys(f).size == filterKeys.size &&
      this.filterKeys(f).zip(filterKeys).forall { case (a, b) => a.semanticEquals(b) } &&
      from.size == sources.size && from.zip(sources).forall { case (i, c) => creations(i).sameResult(c) }
  }

  /** The name of filter `i`'s metric `name` (every filter has its own). */
  def metricName(name: String, i: Int): String = s"$name$i"

  private val perFilter = Seq(
    "numKeys" -> "keys collected", "inSetKeys" -> "in-set keys", "rowsTested" -> "rows tested",
    "rowsKept" -> "rows kept", "passThroughTasks" -> "pass-through tasks",
    "droppedBeforeScan" -> "dropped before the scan", "filesSkipped" -> "files skipped",
    "rowGroupsSkipped" -> "row groups skipped", "rowsSkipped" -> "rows skipped by the scan")

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows in"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows")) ++
    (0 until filterCount).flatMap { i =>
      val n = if (filterCount > 1) s" (filter ${i + 1})" else ""
      perFilter.map { case (name, text) => metricName(name, i) -> SQLMetrics.createMetric(sparkContext, text + n) } ++
        Seq(metricName("filterBytes", i) -> SQLMetrics.createSizeMetric(sparkContext, s"bloom filter / bitmap size$n"),
          metricName("buildTime", i) -> SQLMetrics.createTimingMetric(sparkContext, s"build time$n"),
          metricName("footerTime", i) -> SQLMetrics.createTimingMetric(sparkContext, s"footer pruning time$n"))
    }

  private def m(name: String, i: Int): SQLMetric = longMetric(metricName(name, i))

  /** Filled on the driver when this operator executes; referenced by the generated code. */
  @transient private lazy val tests = (0 until filterCount).map { i =>
    new RowKeyTest(maxPassRatio, m("passThroughTasks", i),
      m("rowsTested", i), m("rowsKept", i))
  }
  @transient @volatile private var chosen: Map[Int, KeySet] = Map.empty
  @transient @volatile private var pushed: Map[Int, Seq[Expression]] = Map.empty
  @transient @volatile private var pruning: Map[Int, KeyPrunedFileIndex.Counts] = Map.empty
  @transient @volatile private var expected: Map[Int, Double] = Map.empty
  @transient @volatile private var dropped: Map[Int, String] = Map.empty
  @transient @volatile private var untested: Map[Int, String] = Map.empty

  /** What filter `i` chose, pushed and skipped, once this operator has run. */
  def filterDescription(i: Int): String = (chosen.get(i), dropped.get(i)) match {
    case (f, Some(why)) => f.map(_.describe + "; ").getOrElse("") + s"dropped before the scan: $why"
    case (None, None) => "not executed yet"
    case (Some(f), None) => f.describe + untested.get(i).map("; not tested per row: " + _).getOrElse("") +
      expected.get(i).map(k => f"; expected to keep ${k * 100}%.1f%% of the scan's rows").getOrElse("") +
      pushed.get(i).filter(_.nonEmpty).map(p => s"; pushed to scan: ${p.map(brief).mkString(", ")}").getOrElse("") +
      pruning.get(i).map(c =>
        if (c.footersNotRead > 0) s"; footers not read (${c.footersNotRead} files > maxFooterFiles)" +
          (if (c.footersSampled == 0) "" else s", ${c.footersSampled} sampled: " +
            (if (pushed.get(i).exists(_.nonEmpty)) "row groups to skip" else "no row group to skip, nothing pushed"))
        else s"; footers of ${c.footersRead} files read: ${c.filesSkipped} files, ${c.rowGroupsSkipped} row groups " +
          s"(${c.rowsSkipped} rows) skipped").getOrElse("")
  }

  private def brief(e: Expression): String = e match {
    case In(v, list) if list.size > 10 => s"$v IN (${list.size} values)"
    case o: Or if o.collect { case r: Or => r }.size > 3 =>
      s"${o.references.head} in ${o.collect { case r: Or => r }.size + 1} ranges"
    case other => other.sql
  }

  def describeFilter(f: Int): String = {
    val from = sourcesOf(f).map { i =>
      s"${creationRead(i).mkString("[", ", ", "]")} (${if (broadcast(i)) "broadcast" else "shuffle"})"
    }
    s"${filterKeys(f).mkString("[", ", ", "]")} from ${from.mkString(" or ")}"
  }

  /** The creation sides feeding filter `f`. */
  def sources(f: Int): Seq[KeyCollector.Source] =
    sourcesOf(f).map(c => KeyCollector.Source(creations(c), creationKeys(c), broadcast(c), picks(c)))

  /** The keys creation side `c`'s filter reads over its exchange's rows (some of its join's keys, or all). */
  def creationRead(c: Int): Seq[Expression] = picks(c).map(creationKeys(c))

  /** Filter `f`'s keys over the child's rows. */
  def filterKeys(f: Int): Seq[Expression] = keys(sourcesOf(f).head)

  override def simpleString(maxFields: Int): String =
    s"DynamicFilter ${(0 until filterCount).map(describeFilter).mkString(" AND ")}"

  /** Builds the filters (once per execution of this operator) and returns the child to read, with the
   * filters pushed into its scan. */
  private lazy val prepared: SparkPlan = {
    val plan = buildOrder.foldLeft(child)(prepare)
    built = true
    plan
  }
  @transient @volatile private var built = false

  // Spark prepares a plan before it runs it, and a stage's code is generated after: the filters built
  // here first, a filter not tested per row generates no code (explain's codegen, without a prepare,
  // shows every test)
  override protected def doPrepare(): Unit = prepared

  /** The filters in the order they are built: those whose keys are cheap to read first (broadcasts, then
   * shuffle stages by their row counts, unknown counts last), so that what they are expected to keep tells
   * whether a costlier one's keys are worth collecting ([[outnumbered]]). */
  private def buildOrder: Seq[Int] = (0 until filterCount).sortBy { i =>
    if (sourcesOf(i).forall(broadcast)) 0L else KeyCollector.creationRows(sources(i)).getOrElse(Long.MaxValue)
  }

  /** `plan` with filter `i` built and pushed into it (or dropped). */
  private def prepare(plan: SparkPlan, i: Int): SparkPlan =
    smallAfterDpp(i).orElse(dropUnbuilt(i)).orElse(outnumbered(i)) match {
    case Some(reason) => drop(i, reason); plan
    case None =>
      val filter = build(i)
      val groups = footerGroups(i, filter)
      val keep = groups.flatMap(KeepEstimate(filter, _))
      tests(i).expectedKeep = keep
      keep.foreach(k => expected += i -> k)
      keep.filter(_ > maxPassRatio) match {
        case Some(k) =>
          drop(i, f"expected to keep ${k * 100}%.0f%% of its rows (the keys against the key column's values in the scan's footers)")
          plan
        case None if repeatsJoins(i) && (filter ne EmptyKeySet) =>
          val joins = if (sourcesOf(i).size > 1) "the broadcast joins it reads probe" else "the broadcast join it reads probes"
          untested += i -> s"$joins each of these rows in this stage: a test per row would only repeat that probe"
          pushDown(plan, i, filter)
        case None =>
          tests(i).filter = sparkContext.broadcast(filter)
          pushDown(plan, i, filter)
      }
  }

  /** Why filter `i` is dropped before its keys are collected, if it is: its creation sides are shuffle stages
   * holding more rows (AQE's count) than are expected to reach it — the scan's rows (its footers) times what
   * the filters built before it are expected to keep. A key row costs its collection about what a row the
   * filter could drop costs the stages above (a shuffle's, a join's), so such a filter costs more than it can
   * spare: TPC-DS q29 at sf10 collected 8.6M catalog_sales keys in 4.8 s to test the 570K store_sales rows a
   * date filter left (keeping 22K); without it 0.78x Spark's bloom filter. Without AQE nothing is known and
   * every filter is built. */
  private def outnumbered(i: Int): Option[String] =
    for {
      creationRows <- KeyCollector.creationRows(sources(i)) // (None with a broadcast source)
      scanRows <- footerRows(i)
      keeps = expected.collect { case (j, k) if !dropped.contains(j) => k }
      reach = keeps.foldLeft(scanRows.toDouble)(_ * _)
      if creationRows > reach
    } yield {
      val before = if (keeps.isEmpty) "" else
        s" times the ${keeps.map(k => f"${k * 100}%.1f%%").mkString(", ")} the filters built before it are expected to keep"
      f"its creation side's $creationRows rows outnumber the ~${reach}%.0f expected to reach it (the scan's $scanRows " +
        s"rows in its footers$before): collecting its keys would cost more than the rows it could drop (not collected)"
    }

  /** The scan's rows by its footers, read for another filter's key column or else for one of filter `i`'s. */
  private def footerRows(i: Int): Option[Long] = {
    val read = rowGroupsByKey.values.iterator.asScala.collectFirst { case Some(groups) => groups }
    read.orElse(filterKeys(i).flatMap(_.references).iterator.map(scanRowGroups).collectFirst { case Some(g) => g })
      .flatMap(KeyScanPushdown.scanRows(child, _, SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf)))
  }

  private def maxPassRatio: Double = SieveConf.DYNAMIC_FILTER_MAX_PASS_RATIO.get(conf)

  /** Why filter `i` is dropped before its keys are collected, if it is: its sources are broadcasts of one
   * long-valued key whose count and range alone, against the scan's footers, say it keeps more than
   * `maxPassRatio` of the rows (a dimension joined for its columns, every key of it: collecting the keys
   * into a set costs the driver more than the pass over them that shows it). */
  private def dropUnbuilt(i: Int): Option[String] = filterKeys(i) match {
    case Seq(key: Attribute) if sourcesOf(i).forall(broadcast) =>
      val start = System.nanoTime()
      def range = try KeyCollector.broadcastRange(sources(i))
        finally m("buildTime", i) += NANOSECONDS.toMillis(System.nanoTime() - start)
      for {
        groups <- scanRowGroups(key)
        keys <- range if keys.rows > 0
        keep <- KeepEstimate.of(keys.rows.toDouble, keys.min, keys.max, groups) if keep > maxPassRatio
      } yield {
        expected += i -> keep
        f"expected to keep ${keep * 100}%.0f%% of its rows (its ${keys.rows} keys in [${keys.min}, ${keys.max}] " +
          "against the key column's values in the scan's footers; not collected)"
      }
    case _ => None
  }

  // what the scan reads once DPP has run (None: no DPP on it), asked once for every filter
  @transient private lazy val keptByDpp = KeyScanPushdown.scanBelow(child).flatMap(PrunedScanBytes(_))

  /** Why filter `i` is dropped before its keys are collected, if the scan reads less than it must for the
   * filter to pay once dynamic partition pruning has run (the planner sized it by the whole table). */
  private def smallAfterDpp(i: Int): Option[String] = {
    val least = sourcesOf(i).map(minScanBytes).min
    if (least <= 0) None else keptByDpp.flatMap(_.tooSmall(least)).map("the scan " + _)
  }

  /** Filter `i` dropped before the scan, for `reason`: not pushed, not tested (no code). */
  private def drop(i: Int, reason: String): Unit = {
    dropped += i -> reason
    m("droppedBeforeScan", i) += 1
    postDriverMetrics(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY), metricName("droppedBeforeScan", i))
  }

  /** Whether filter `i`'s row test would only repeat the probes of the broadcast joins it reads, in this
   * stage (pushed into the scan, it still skips what the scan's statistics rule out). With several
   * filters, the one order vanilla Spark probes in costs less than ours: a test per row (an in-set or a
   * bloom filter) costs more than a broadcast join's probe of a dense long array, and it adds, not
   * replaces — TPC-DS q52 / q3 / q42 / q55 at sf10 spent 150-230 ms more CPU per query testing each of
   * store_sales' 27.5M rows (0.86x vanilla); without the tests 0.98x. */
  private def repeatsJoins(i: Int): Boolean =
    sourcesOf(i).forall(probedInStage) && !SieveConf.DYNAMIC_FILTER_SAME_STAGE_ROW_TEST.get(conf)

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

  override def inputRDDs(): Seq[RDD[InternalRow]] = prepared.asInstanceOf[CodegenSupport].inputRDDs()

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
  private def testedPerRow: Seq[Int] =
    (0 until filterCount).filterNot(i => built && (dropped.contains(i) || untested.contains(i)))

  /** Whether the rows pass through untouched and uncounted: no filter tested per row. */
  def passesRows: Boolean = testedPerRow.isEmpty

  /** Without whole-stage codegen: the same tests over rows. */
  override protected def doExecute(): RDD[InternalRow] = {
    val rows = prepared.execute()
    if (passesRows) rows
    else RowFilter.filterRows(rows, testedPerRow.map(check).reduce[Expression](And), child.output,
      Some(longMetric("numInputRows")), longMetric("numOutputRows"))
  }

  private def build(i: Int): KeySet = {
    val start = System.nanoTime()
    val limits = KeyCollector.Limits(
      SieveConf.DYNAMIC_FILTER_MAX_IN_SET_SIZE.get(conf), SieveConf.DYNAMIC_FILTER_MAX_KEY_BYTES.get(conf),
      SieveConf.DYNAMIC_FILTER_MAX_BLOOM_BYTES.get(conf), SieveConf.DYNAMIC_FILTER_BLOOM_FPP.get(conf))
    val executionId = Option(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))
    val filter = KeyCollector.collectOnce(executionId, sources(i), limits).getOrElse(PassThrough)
    chosen += i -> filter
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

  /** `plan` with filter `i` pushed into its scan ([[KeyScanPushdown]]); footer counts become metrics. */
  private def pushDown(plan: SparkPlan, i: Int, filter: KeySet): SparkPlan = filterKeys(i) match {
    case Seq(key: Attribute) =>
      val limits = KeyScanPushdown.Limits.from(conf)
      val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
      val (pushedPlan, done) = KeyScanPushdown(plan, key, filter, limits, conf, c => {
        m("filesSkipped", i).set(c.filesSkipped)
        m("rowGroupsSkipped", i).set(c.rowGroupsSkipped)
        m("rowsSkipped", i).set(c.rowsSkipped)
        m("footerTime", i).set(NANOSECONDS.toMillis(c.timeNs))
        postDriverMetrics(executionId, Seq("filesSkipped", "rowGroupsSkipped", "rowsSkipped", "footerTime")
          .map(metricName(_, i)): _*)
      })
      pushed += i -> done.predicates
      done.pruning.foreach(p => pruning += i -> p)
      pushedPlan
    case _ => plan
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): DynamicFilterExec =
    copy(child = newChildren.head, creations = newChildren.tail)
}

object DynamicFilterExec {
  /** An operator of one filter, on `child`'s `keys`, fed by `sources` (see `and`). */
  def apply(child: SparkPlan, keys: Seq[Expression], sources: Seq[KeyCollector.Source], probedInStage: Boolean,
      minScanBytes: Long): DynamicFilterExec =
    DynamicFilterExec(child, Nil, Nil, Nil, Nil, Nil, Nil, Nil, Nil).and(keys, sources, probedInStage, minScanBytes)
}
