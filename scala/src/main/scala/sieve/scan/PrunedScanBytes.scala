package sieve.scan

import org.apache.spark.sql.SparkShims
import org.apache.spark.sql.catalyst.optimizer.BuildLeft
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BoundReference, DynamicPruningExpression,
  Expression, InSet, PlanExpression, Predicate}
import org.apache.spark.sql.execution.{ExecSubqueryExpression, FileSourceScanExec, InSubqueryExec, SparkPlan,
  SubqueryAdaptiveBroadcastExec}
import org.apache.spark.sql.execution.adaptive.{BroadcastQueryStageExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.Exchange
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, PartitioningAwareFileIndex}
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SieveBroadcastKeys}
import org.apache.spark.sql.types.StructType

import sieve.plan.PlanMemo

/**
 * What a file scan reads once Spark's dynamic partition pruning has run: the bytes of the columns it reads
 * in the files of the partitions DPP keeps. Spark's estimate and the planner see the whole table (TPC-DS
 * q6 at sf10: store_sales' 138 MB, of which DPP keeps one month, 1.6%); a dynamic filter that pays on the
 * table may not pay on that month. Asked on the driver as the scan's stage starts, when DPP's subqueries
 * can run (Spark waits for them there anyway), and at planning once AQE has computed the broadcast DPP
 * reads its keys from (the scan's stage is made after it: a filter that would be dropped then is not
 * placed, and the stage never waits for its creation side).
 */
object PrunedScanBytes {
  /** The columns' bytes in the files kept, of how many files the static filters keep. */
  final case class Kept(bytes: BigInt, files: Int, ofFiles: Int)

  /** What `scan` reads after its dynamic partition filters, which this runs (their subqueries are computed
   * once and cached); None without such a filter, or for a scan whose files are not listed in memory
   * already (a catalog table's partitions would be listed again). Mirrors Spark's own pruning
   * (`FileSourceScanLike.dynamicallySelectedPartitions`): the static listing, then DPP's predicate on each
   * partition's values. */
  def apply(scan: FileSourceScanExec): Option[Kept] = dynamicFilters(scan).map { dynamic =>
    dynamic.foreach(_.foreach { case s: ExecSubqueryExpression => s.updateResult(); case _ => })
    kept(scan, dynamic)
  }

  /** What `scan` will read once DPP has run, known at planning: where each of its DPP filters reads the keys
   * of a broadcast hash join's build side in `plan` that AQE has computed already (a completed stage), the
   * partitions whose values are among those keys (DPP reads the same keys from that broadcast once the
   * scan's stage starts). None when a filter's broadcast is not such a stage, or it filters on several keys.
   * `stageOf`: the stage a build side is or will be (an exchange AQE replaces by one made already). */
  def whenBuilt(scan: FileSourceScanExec, plan: SparkPlan, stageOf: SparkPlan => Option[QueryStageExec]): Option[Kept] =
      dynamicFilters(scan).flatMap { dynamic =>
    // each broadcast hash join whose build side has been computed: its build keys, and that stage (a relation's
    // keys are read by position: a stage made for an equal exchange holds the same)
    lazy val built = plan.collect { case b: BroadcastHashJoinExec => buildOf(b) }.flatMap { case (keys, side) =>
      builtStage(side, stageOf).filter(_.getRuntimeStatistics.rowCount.exists(_ <= MaxKeysAtPlanning)).map((keys, _))
    }
    val resolved = dynamic.map {
      // before AQE makes the scan's stage (SubqueryAdaptiveBroadcastExec) and as it does (SubqueryBroadcastExec)
      case DynamicPruningExpression(in: InSubqueryExec) => SparkShims.dppKeys(in.plan) match {
        case Some((Seq(i), dppKeys)) if dppKeys(i).dataType == in.child.dataType =>
          built.find { case (keys, _) => sameKeys(keys, dppKeys) }.map { case (keys, stage) => (in.child, keys, i, stage) }
        case _ => None
      }
      case _ => None
    }
    if (!resolved.forall(_.isDefined)) None
    else resolved.flatten match {
      case one @ Seq((column: AttributeReference, _, i, stage)) =>
        keptOfStage(stage).computeIfAbsent(KeptKey(scan, column.name, i), _ => keptBy(scan, one)).toOption
      case several => keptBy(scan, several).toOption
    }
  }

  /** What `scan` keeps of its files by the keys of built broadcasts (its DPP filters' column, the broadcast's
   * key columns, which of them, the stage); Left when a broadcast has no keys to read. */
  private def keptBy(scan: FileSourceScanExec, resolved: Seq[(Expression, Seq[Expression], Int, BroadcastQueryStageExec)])
      : Either[Unit, Kept] = {
    val sets = resolved.map { case (column, keys, i, stage) =>
      SieveBroadcastKeys(stage, keys).map(rows => InSet(column, rows.filterNot(_.isNullAt(i)).map(_.get(i, keys(i).dataType)).toSet): Expression)
    }
    if (sets.forall(_.isDefined)) Right(kept(scan, sets.flatten)) else Left(())
  }

  /** What DPP keeps of each scan by a built broadcast's keys, on that stage: AQE plans the query again after
   * each stage and asks again of the same scan, whose partitions are listed and tested each time (TPC-DS q55
   * partitioned: 10-27 ms a plan over store_sales' 1823 partitions). The stage is the same object in each of its
   * query's plans; its answers go with it. */
  private val KeptByStage = TreeNodeTag[java.util.concurrent.ConcurrentHashMap[KeptKey, Either[Unit, Kept]]]("sieve.keptByDpp")

  private def keptOfStage(stage: BroadcastQueryStageExec) = PlanMemo.tagged {
    stage.getTagValue(KeptByStage).getOrElse {
      val m = new java.util.concurrent.ConcurrentHashMap[KeptKey, Either[Unit, Kept]]()
      stage.setTagValue(KeptByStage, m)
      m
    }
  }

  /** A scan as far as what DPP keeps of it: its file index (the same object while the table is not refreshed),
   * its static partition filters, the columns it reads, and the partition column DPP's keys are read into. */
  private final case class KeptKey(location: Identity, statics: Seq[Expression], read: StructType, column: String, i: Int)

  private object KeptKey {
    def apply(scan: FileSourceScanExec, column: String, i: Int): KeptKey =
      KeptKey(new Identity(scan.relation.location), staticFilters(scan).map(_.canonicalized), scan.requiredSchema, column, i)
  }

  private final class Identity(val ref: AnyRef) {
    override def equals(o: Any): Boolean = o match { case other: Identity => other.ref eq ref; case _ => false }
    override def hashCode: Int = System.identityHashCode(ref)
  }

  /** The broadcasts AQE has not built yet that `scan`'s DPP will read its keys from: for each of its DPP
   * filters (AQE's, the scan's stage not made yet), the build side of the broadcast hash join above `scan` in
   * `plan` on the same keys (the join DPP was planned for). Once they have run, AQE plans again and
   * [[whenBuilt]] knows what DPP keeps. None when a filter has no such build side, or one is built already
   * (`stageOf` as there). */
  def pendingDpp(scan: FileSourceScanExec, plan: SparkPlan, stageOf: SparkPlan => Option[QueryStageExec])
      : Option[PendingDpp] =
    dynamicFilters(scan).flatMap { dynamic =>
      lazy val above = plan.collect { case b: BroadcastHashJoinExec if streamedOf(b).find(_ eq scan).isDefined => b }
      val joins = dynamic.map {
        case DynamicPruningExpression(in: InSubqueryExec) if in.plan.isInstanceOf[SubqueryAdaptiveBroadcastExec] =>
          SparkShims.dppKeys(in.plan).flatMap { case (_, dppKeys) => above.find(b => sameKeys(buildOf(b)._1, dppKeys)) }
        case _ => None
      }
      if (joins.exists(_.isEmpty) || joins.flatten.exists(b => builtStage(buildOf(b)._2, stageOf).isDefined)) None
      else {
        // the scan in the join's own stage (no exchange between): that stage cannot start before the broadcast
        def streams(p: SparkPlan): Boolean =
          (p eq scan) || !(p.isInstanceOf[Exchange] || p.isInstanceOf[QueryStageExec]) && p.children.exists(streams)
        Some(PendingDpp(joins.flatten.map(buildOf(_)._2).distinct, joins.flatten.forall(b => streams(streamedOf(b)))))
      }
    }

  /** The broadcasts DPP will read a scan's keys from (not built yet); `inItsStage`: each is a build side of a
   * join that streams the scan in its own stage, so that stage waits for them anyway (TPC-DS q23 / q65
   * partitioned); else the stage would start at once, DPP waiting for them inside it (q54: store_sales'
   * shuffle). */
  final case class PendingDpp(broadcasts: Seq[SparkPlan], inItsStage: Boolean)

  private def buildOf(b: BroadcastHashJoinExec): (Seq[Expression], SparkPlan) =
    if (b.buildSide == BuildLeft) (b.leftKeys, b.left) else (b.rightKeys, b.right)

  private def streamedOf(b: BroadcastHashJoinExec): SparkPlan = if (b.buildSide == BuildLeft) b.right else b.left

  private def builtStage(build: SparkPlan, stageOf: SparkPlan => Option[QueryStageExec]) =
    stageOf(build).collect { case s: BroadcastQueryStageExec if s.isMaterialized => s }

  private def sameKeys(a: Seq[Expression], b: Seq[Expression]): Boolean =
    a.size == b.size && a.zip(b).forall { case (x, y) => x.semanticEquals(y) }

  /** At most this many rows in a broadcast whose keys are read at planning (AQE plans again after each stage,
   * and reads them again; DPP's keys are a filtered dimension's: a month of dates, a few stores). Beyond,
   * the filter is checked as its scan starts. */
  private val MaxKeysAtPlanning = 100000

  /** What `scan` reads of the partitions its static filters list that satisfy `dynamic` (partition filters
   * that can be evaluated). Mirrors Spark's own pruning (`FileSourceScanLike.dynamicallySelectedPartitions`):
   * the static listing, then the dynamic predicate on each partition's values. */
  private def kept(scan: FileSourceScanExec, dynamic: Seq[Expression]): Kept = {
    val partitions = scan.relation.partitionSchema
    val predicate = Predicate.createInterpreted(dynamic.reduce(And).transform {
      case a: AttributeReference =>
        val i = partitions.indexWhere(_.name == a.name)
        BoundReference(i, partitions(i).dataType, nullable = true)
    })
    val listed = scan.relation.location.listFiles(staticFilters(scan), Nil)
    val kept = listed.filter(p => predicate.eval(p.values))
    val fileBytes = kept.flatMap(_.files.map(_.fileStatus.getLen)).map(BigInt(_)).sum
    Kept(readShare(scan, fileBytes), kept.map(_.files.size).sum, listed.map(_.files.size).sum)
  }

  /** `scan`'s DPP filters, when it has some and its files are listed in memory already. */
  private def dynamicFilters(scan: FileSourceScanExec): Option[Seq[Expression]] =
    Some(scan.partitionFilters.filter(isDynamic))
      .filter(d => d.nonEmpty && scan.relation.location.isInstanceOf[PartitioningAwareFileIndex])

  /** The bytes of `relation`'s files, and of `index`'s: sums over their listing, with a file system lookup per
   * root path, asked for each join whose keys reach a scan of them (~10% of the rules' planning time of TPC-DS
   * q72): remembered while the execution that asks lasts ([[PlanMemo.ExecutionMemo]]). */
  def relationBytes(relation: HadoopFsRelation): Long = relationBytesOf(relation)
  def indexBytes(index: FileIndex): Long = indexBytesOf(index)

  private val relationBytesOf = new PlanMemo.ExecutionMemo[HadoopFsRelation, Long](_.sizeInBytes)
  private val indexBytesOf = new PlanMemo.ExecutionMemo[FileIndex, Long](_.sizeInBytes)

  /** `fileBytes` of `scan`'s files, at the share of their columns (by width) the scan reads. */
  def readShare(scan: FileSourceScanExec, fileBytes: BigInt): BigInt = {
    val all = math.max(scan.relation.dataSchema.map(_.dataType.defaultSize).sum, 1)
    fileBytes * scan.requiredSchema.map(_.dataType.defaultSize).sum / all
  }

  /** The static partition filters only (DPP's need their subquery run): a superset of the files read. */
  def staticFilters(scan: FileSourceScanExec): Seq[Expression] = scan.partitionFilters.filterNot(isDynamic)

  /** A partition filter of DPP's (it holds a subquery). */
  private def isDynamic(e: Expression): Boolean = e.exists(_.isInstanceOf[PlanExpression[_]])
}
