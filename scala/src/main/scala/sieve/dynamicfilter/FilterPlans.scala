package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, DynamicPruningExpression, Expression, IsNotNull,
  Literal, PredicateHelper}
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering
import org.apache.spark.sql.execution.{ExternalRDDScanExec, FileSourceScanExec, FilterExec, InSubqueryExec,
  LocalTableScanExec, RangeExec, RDDScanExec, SerializeFromObjectExec, SparkPlan,
  SubqueryAdaptiveBroadcastExec, WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, BroadcastQueryStageExec, QueryStageExec,
  SieveStageCache}
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.execution.exchange.{Exchange, ReusedExchangeExec}
import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.plan.PlanMemo
import sieve.scan.{KeyPrunedFileIndex, PrunedScanBytes, RowGroupFilters}

/** What the dynamic-filter rules ask of a physical plan: its scans, their sizes, its shared exchanges. */
object FilterPlans extends PredicateHelper {

  /** Why a join got no dynamic filter (shown by `spark_sieve.explain`). */
  val NoFilter: TreeNodeTag[String] = TreeNodeTag[String]("sieve.dynamicFilter.none")

  /** Tags `join` (and its logical join: AQE plans a join again once stages below it have run, and the
   * reason given while their scans were in the plan still holds) with why it has no filter. */
  def tagNoFilter(join: SparkPlan, why: String): Unit = {
    join.logicalLink.foreach(_.setTagValue(NoFilter, why))
    join.setTagValue(NoFilter, why)
  }

  /** A file scan, a data source V2 scan (Iceberg, Delta's and other connectors' V2 reads) or a cached table
   * outside the stages AQE has made: the only nodes a filter can go on. Under the testing switch
   * (`spark.sieve.testing.placeEveryFilter`) also rows made in memory (a local relation, an RDD's, a range, the
   * rows serialized from a Dataset of objects: Spark's suites' `testData` and the like, an RDD of case classes), as
   * Spark's own suites read theirs: a filter there only tests rows, which pays nowhere but proves the test. */
  def targetable(p: SparkPlan): Boolean = p match {
    case _: FileSourceScanExec | _: BatchScanExec | _: InMemoryTableScanExec => true
    case _: LocalTableScanExec | _: RDDScanExec | _: ExternalRDDScanExec[_] | _: RangeExec | _: SerializeFromObjectExec =>
      SieveConf.placeEveryFilter(SQLConf.get)
    case _ => false
  }

  /** The scan under a filter's target (its own filters and dynamic filters aside). */
  def scanOf(target: SparkPlan): SparkPlan = target match {
    case f: DynamicFilterExec => scanOf(f.child)
    case f: FilterExec => scanOf(f.child)
    case scan => scan
  }

  def nameOf(scan: SparkPlan): String = scan match {
    case s: FileSourceScanExec => s"the scan of ${s.relation.location.rootPaths.map(_.getName).mkString(", ")}"
    case s: BatchScanExec => s"the scan of ${s.table.name}"
    case _: InMemoryTableScanExec => "the cached table"
    case other => s"the rows of ${other.nodeName}"
  }

  /** The bytes a scan reads: its files' bytes (the cached table's, once cached) of the columns it reads
   * ([[columnBytes]]), in the row groups its own filters do not skip ([[RowGroupFilters]]: TPC-H q10 on orders
   * sorted by date, whose filter to a quarter reads 1 row group in 28, waited for lineitem's keys for its
   * 9.9 MB, read as whole, and was 0.85x vanilla). */
  def scanBytes(scan: SparkPlan): BigInt = scanBytesOf(scan)

  // (a listed table's size is a sum over its files, asked for each join whose keys reach it)
  private val scanBytesOf = new PlanMemo.Memo[SparkPlan, BigInt]({
    case s: FileSourceScanExec =>
      RowGroupFilters.keptShare(s, sampledFooterFiles(SQLConf.get), SQLConf.get).fold(columnBytes(s))(share =>
        (BigDecimal(columnBytes(s)) * share).setScale(0, BigDecimal.RoundingMode.CEILING).toBigInt)
    case other => columnBytes(other)
  })

  /** The footers a question asked at planning reads: `maxFooterFiles`, at most a sample's. */
  def sampledFooterFiles(conf: SQLConf): Long =
    math.min(SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf), KeyPrunedFileIndex.SampleFiles.toLong)

  /** The bytes of the columns a scan reads in all of its files (the cached table's, once cached). */
  def columnBytes(scan: SparkPlan): BigInt = scan match {
    case s: FileSourceScanExec => PrunedScanBytes.readShare(s, PrunedScanBytes.relationBytes(s.relation))
    case s: InMemoryTableScanExec => s.relation.computeStats().sizeInBytes
    case other => sizeOf(other)
  }

  /** What a plan's output is known to weigh: a completed AQE stage's real size, else the estimate of
   * the first logical plan it links to. */
  def sizeOf(plan: SparkPlan): BigInt = sizeOfMemo(plan)

  // (asked of each join's sides and creation sides, at each walk)
  private val sizeOfMemo = new PlanMemo.Memo[SparkPlan, BigInt](sizeNow)

  private def sizeNow(plan: SparkPlan): BigInt = plan match {
    // a broadcast stage's size is its hash relation's (a long-keyed one can be a dense array over the key
    // range): its rows, at the width of its columns
    case s: BroadcastQueryStageExec if s.isMaterialized && s.getRuntimeStatistics.rowCount.isDefined =>
      s.getRuntimeStatistics.rowCount.get * (8 + s.output.map(_.dataType.defaultSize).sum)
    case s: QueryStageExec if s.isMaterialized => s.getRuntimeStatistics.sizeInBytes
    case s: QueryStageExec => sizeOf(s.plan)
    case r: ReusedExchangeExec => sizeOf(r.child)
    case e: Exchange if materialized(e) => stageOf(e).fold(BigInt(0))(sizeOf)
    case _ => plan.logicalLink.map(_.stats.sizeInBytes).getOrElse(
      if (plan.children.isEmpty) BigInt(Long.MaxValue) else plan.children.map(sizeOf).sum)
  }

  /** Whether `plan` is an AQE stage that has run (or a reuse of one, or an exchange AQE puts one in place of). */
  def materialized(plan: SparkPlan): Boolean = stageOf(plan).exists(_.isMaterialized)

  /** The AQE stage `plan` is, reuses, or — an exchange computing what a stage made already in this execution
   * computes — the one AQE puts in its place (TPC-DS q24: the subquery's broadcasts of store and customer are
   * its query's; taken for broadcasts still to build, they held a bounded wait that nothing else would end). */
  def stageOf(plan: SparkPlan): Option[QueryStageExec] = plan match {
    case s: QueryStageExec => Some(s)
    case r: ReusedExchangeExec => stageOf(r.child)
    case e: Exchange => madeStage(e)
    case _ => None
  }

  // (a thread's own: rules run on the thread that plans, and threads they start must not inherit a run's cache)
  private val madeStages = new ThreadLocal[SieveStageCache]
  private val madeStage = new PlanMemo.Memo[SparkPlan, Option[QueryStageExec]](e =>
    Option(madeStages.get).flatMap(cache => scala.util.Try(cache.find(e)).toOption.flatten))

  /** `body`, a run of a dynamic-filter rule on `plan` ([[PlanMemo.during]]), seeing the stages AQE made already
   * in this execution ([[stageOf]]) where `plan` holds stages of that execution's cache: AQE runs its query
   * then, planned already. */
  def during[T](plan: SparkPlan)(body: => T): T = PlanMemo.during {
    val cache = if (madeStages.get != null || !SQLConf.get.exchangeReuseEnabled ||
        !plan.exists(_.isInstanceOf[QueryStageExec])) None
      else PlanMemo.executionId.flatMap(id => scala.util.Try(SieveStageCache.of(id)).toOption.flatten)
        .filter(c => plan.exists { case s: QueryStageExec => c.holds(s); case _ => false })
    cache.fold(body) { c =>
      madeStages.set(c)
      try body finally madeStages.remove()
    }
  }

  /** What an exchange (or its stage, or a reuse of it) computes, and `key` there: a reuse has attributes of
   * its own (every copy of an exchange must get the same answer here, or the copies differ and the plan
   * computes both: TPC-DS q47's CTE, read three times, whose item broadcast is reused). */
  def exchanged(plan: SparkPlan, key: Attribute): Option[(SparkPlan, Attribute)] = plan match {
    case s: QueryStageExec => exchanged(s.plan, key)
    case r: ReusedExchangeExec =>
      val i = r.output.indexWhere(_.exprId == key.exprId)
      if (i < 0) None else exchanged(r.child, r.child.output(i))
    case e: Exchange => Some((e.child match {
      case w: WholeStageCodegenExec => w.child
      case c => c
    }, key))
    case other => Some((other, key))
  }

  /** Whether `condition` drops more than rows with NULL keys (which every join key gets a test for). */
  def dropsMoreThanNulls(condition: Expression): Boolean =
    splitConjunctivePredicates(condition).exists(!_.isInstanceOf[IsNotNull])

  /** Whether the rows of `target`'s scan pass a filter of its own that tests more than NULL keys. */
  def filteredOnItsOwn(target: SparkPlan): Boolean = target match {
    case f: DynamicFilterExec => filteredOnItsOwn(f.child)
    case FilterExec(condition, _) => dropsMoreThanNulls(condition)
    case _ => false
  }

  /** A file scan with a partition filter that can drop partitions (not AQE's dropped DPP, `true`), or a V2
   * scan with a runtime filter that can. */
  def prunedByPartition(scan: SparkPlan): Boolean = scan match {
    case s: FileSourceScanExec => s.partitionFilters.exists(prunes)
    case s: BatchScanExec => s.runtimeFilters.exists(prunes)
    case _ => false
  }

  /** Whether a scan's partition or runtime filter can drop partitions. */
  def prunes(filter: Expression): Boolean = filter match {
    case _: IsNotNull | DynamicPruningExpression(Literal.TrueLiteral) => false
    case _ => true
  }

  /** The columns of `scan` whose keys are dynamic partition pruning's: a file scan's partition columns, the
   * columns a V2 scan filters its partitions by at run time (`SupportsRuntimeV2Filtering.filterAttributes`,
   * which Spark's DPP hands its keys to: Iceberg's partition source columns, hidden partitioning's too). */
  def partitionColumns(scan: SparkPlan): Seq[String] = scan match {
    case s: FileSourceScanExec => s.relation.partitionSchema.fieldNames.toSeq
    case s: BatchScanExec => s.scan match {
      case r: SupportsRuntimeV2Filtering => r.filterAttributes.toSeq.map(_.fieldNames.mkString("."))
      case _ => Nil
    }
    case _ => Nil
  }

  /** Exchanges with a canonical copy elsewhere in the plan (or in a stage made already, [[stageOf]]): one scan
   * computed for both, which a filter in one copy would undo. A dynamic filter's creation side is no copy: it is
   * the very exchange its join reads ([[CreationRewire]] keeps it so when a filter goes into that exchange). */
  def sharedExchanges(plan: SparkPlan): SparkPlan => Boolean = {
    // without the dynamic filters: a join inside each copy puts its filter there during this same pass
    // (TPC-DS q59: the date join inside the CTE), and the copy must still count as one with the other
    def exchanges(p: SparkPlan): Seq[CreationRewire.Unfiltered] = {
      val here = p match {
        case s: QueryStageExec => Seq(CreationRewire.unfiltered(s.plan))
        case r: ReusedExchangeExec => Seq(CreationRewire.unfiltered(r.child))
        case e: Exchange => Seq(CreationRewire.unfiltered(e))
        case _ => Nil
      }
      val below = p match {
        case f: DynamicFilterExec => Seq(f.child)
        case other => other.children
      }
      here ++ (below ++ p.subqueries).flatMap(exchanges)
    }
    // grouped by shape (cheap); an exchange asked about is canonicalized, with the others of its shape, only then:
    // most exchanges never are (AQE plans a query again after each stage, with new nodes each time: TPC-DS q83's
    // three alike date subqueries had each exchange canonicalized at each plan)
    val byShape = exchanges(plan).groupBy(_.hashCode)
    val answers = new java.util.IdentityHashMap[SparkPlan, java.lang.Boolean]()
    def copied(e: SparkPlan): Boolean = {
      val u = CreationRewire.unfiltered(e)
      byShape.getOrElse(u.hashCode, Nil).iterator.filter(_ == u).take(2).size > 1
    }
    // (an exchange AQE puts a stage made already in place of has its copy there: a subquery's, its query's)
    e => answers.computeIfAbsent(e, e => copied(e) || (e.isInstanceOf[Exchange] && stageOf(e).isDefined))
  }

  /** The tables read by the build plans of Spark's dynamic partition pruning filters in `plan`. */
  def dppBuildTables(plan: SparkPlan): Set[String] =
    plan.collectWithSubqueries { case p => p.expressions.flatMap(_.collect {
      case d: DynamicPruningExpression => d.child.collect {
        case s: InSubqueryExec => s.plan match {
          case a: SubqueryAdaptiveBroadcastExec => tablesOf(a.child)
          case other => tablesOf(other)
        }
      }.flatten
    }).flatten }.flatten.toSet

  /** Names of the tables a plan reads (file scans by their root paths, anything else by its node). */
  def tablesOf(plan: SparkPlan): Seq[String] = plan match {
    case a: AdaptiveSparkPlanExec => tablesOf(a.inputPlan)
    case s: QueryStageExec => tablesOf(s.plan)
    case r: ReusedExchangeExec => tablesOf(r.child)
    case s: FileSourceScanExec => s.relation.location.rootPaths.map(_.toString)
    case s: BatchScanExec => Seq(s.table.name)
    case leaf if leaf.children.isEmpty => Seq(leaf.nodeName)
    case other => other.children.flatMap(tablesOf)
  }

  /** The exchanges a filter's creation side reads its keys from: itself, or the shuffles its keys are computed
   * from ([[ComputedKeys]]). */
  def exchangesRead(creation: SparkPlan): Seq[SparkPlan] = creation match {
    case ComputedKeys(c) => ComputedKeys.shuffles(c)
    case other => Seq(other)
  }

  /** Whether computing `plan` waits for `exchange`: a dynamic filter in it reads `exchange`'s keys (or computes
   * them from it: [[ComputedKeys]]), or reads an exchange that does. A filter on `exchange`'s side fed by `plan`
   * would then wait for itself (TPC-H q5 at sf10, sort-merge joins: lineitem filtered by orders' keys in the
   * first walk, orders by lineitem's in the second, the copies nested until the plan failed to bind). */
  def waitsFor(plan: SparkPlan, exchange: SparkPlan): Boolean = {
    val target = CreationRewire.unfiltered(exchange)
    def find(p: SparkPlan): Boolean = p match {
      case f: DynamicFilterExec =>
        f.creations.exists(c => exchangesRead(c).exists(CreationRewire.unfiltered(_) == target) || find(c)) || find(f.child)
      case s: QueryStageExec => find(s.plan)
      case r: ReusedExchangeExec => find(r.child)
      case other => other.children.exists(find)
    }
    find(plan)
  }
}
