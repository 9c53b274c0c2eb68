package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{DynamicPruningSubquery, Expression, IsNotNull, PredicateHelper,
  SubqueryExpression}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.internal.SQLConf

import sieve.Preconditions
import sieve.config.SieveConf

/**
 * Where dynamic filters go (the "dynamic filter metadata" of seeds/002): under each equi-join that can
 * drop rows of one side (the application side) by the keys of the other (the creation side) — inner
 * joins (the larger side), left-semi joins (the left side), the non-preserved side of outer joins — a
 * [[DynamicFilter]] directly on the application side when it is safe and pays off:
 *  - safe ([[Preconditions]]): every key's type is binary-stable and every key deterministic, and the
 *    creation side is shared for certain (exchange reuse on, deterministic);
 *  - the application side is a file scan under projections and filters (no IN / EXISTS subquery, nothing
 *    nondeterministic) estimated at `minApplicationBytes` or more;
 *  - the creation side is filtered, or `minSizeRatio` times smaller;
 *  - no key is a partition column of the scan when dynamic partition pruning is on (DPP's job), and the
 *    application side is not the build plan of a DPP filter (DPP reuses a broadcast only of that plan).
 * Applied by [[DynamicFilterStrategy]] as each join is planned, after the whole optimizer ran: an
 * unknown node in the optimized plan would stop Spark's later rules (DPP's filters are pushed down to
 * the scan, and dropped if they cannot get there; the runtime bloom filter likewise), so the plan Spark
 * optimizes is exactly vanilla's. Idempotent: a join with a filter on either side is left alone.
 */
object InjectDynamicFilters extends Rule[LogicalPlan] with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!active(plan)) plan else plan.transformUp { case j: Join => injectInto(j) }

  private def active(plan: LogicalPlan): Boolean =
    SieveConf.enabled(conf) && SieveConf.DYNAMIC_FILTER_ENABLED.get(conf) && !plan.isStreaming

  /** `j` with a DynamicFilter on one side, or `j` itself. */
  def injectInto(j: Join): LogicalPlan = j match {
    // One filter per join: each side's filter would wait for the other's keys.
    case ExtractEquiJoinKeys(joinType, leftKeys, rightKeys, _, _, left, right, _)
        if active(j) && !left.isInstanceOf[DynamicFilter] && !right.isInstanceOf[DynamicFilter] &&
          safeKeys(leftKeys ++ rightKeys) =>
      applicationSides(joinType, left, right).collectFirst {
        case true if qualifies(leftKeys, left, right) => j.copy(left = filtered(leftKeys, rightKeys, left))
        case false if qualifies(rightKeys, right, left) => j.copy(right = filtered(rightKeys, leftKeys, right))
      }.filterNot(_ => buildsPartitionPruning(j)).getOrElse(j)
    case _ => j
  }

  private def safeKeys(keys: Seq[Expression]): Boolean =
    keys.forall(k => Preconditions.deterministic(k) && Preconditions.binaryStable(k.dataType))

  /** Which sides may be filtered (true = left), the preferred one first. */
  private def applicationSides(joinType: JoinType, left: LogicalPlan, right: LogicalPlan): Seq[Boolean] =
    joinType match {
      // the larger first (a materialised broadcast stage may report more bytes than the scan it joins:
      // its hash table's, so both sides are tried)
      case Inner => if (left.stats.sizeInBytes >= right.stats.sizeInBytes) Seq(true, false) else Seq(false, true)
      case LeftSemi | RightOuter => Seq(true)
      case LeftOuter => Seq(false)
      case _ => Nil
    }

  private def filtered(keys: Seq[Expression], creationKeys: Seq[Expression], app: LogicalPlan): LogicalPlan =
    DynamicFilter(keys, JoinKeys(keys, creationKeys), app)

  private def qualifies(keys: Seq[Expression], app: LogicalPlan, creation: LogicalPlan): Boolean =
    fileScan(app) match {
      case Some(fs) =>
        val appBytes = app.stats.sizeInBytes
        val partitionColumns = fs.partitionSchema.fieldNames.toSet
        val onPartitionColumn = keys.flatMap(_.references).exists(a => partitionColumns.exists(conf.resolver(_, a.name)))
        Preconditions.sharedForCertain(creation, conf) &&
          appBytes >= BigInt(SieveConf.DYNAMIC_FILTER_MIN_APPLICATION_BYTES.get(conf)) &&
          !(onPartitionColumn && conf.getConf(SQLConf.DYNAMIC_PARTITION_PRUNING_ENABLED)) &&
          (hasSelectiveFilter(creation) ||
            BigDecimal(creation.stats.sizeInBytes) * SieveConf.DYNAMIC_FILTER_MIN_SIZE_RATIO.get(conf) <= BigDecimal(appBytes))
      case None => false
    }

  /** The file relation under `plan` when `plan` is only projections and filters over it, with no IN /
   * EXISTS subquery (one that became a join would put the filter above that join) and nothing
   * nondeterministic. DPP's and the runtime filter's subqueries are fine: they filter the scan. */
  private def fileScan(plan: LogicalPlan): Option[HadoopFsRelation] = plan match {
    case p @ Project(_, child) if plain(p) => fileScan(child)
    case f @ Filter(_, child) if plain(f) => fileScan(child)
    case LogicalRelation(fs: HadoopFsRelation, _, _, _, _) => Some(fs)
    case _ => None
  }

  private def plain(p: LogicalPlan): Boolean =
    p.expressions.forall(e => Preconditions.deterministic(e) && !SubqueryExpression.hasInOrCorrelatedExistsSubquery(e))

  /** One side of `j` is the build plan of Spark's dynamic partition pruning filter on the other: DPP
   * reuses that side's broadcast only when its plan is exactly the build plan, so nothing goes there
   * (when planning joins made after DPP ran). */
  private def buildsPartitionPruning(j: Join): Boolean = {
    val sides = Seq(j.left, j.right).map(_.canonicalized)
    j.exists(_.expressions.exists(_.exists {
      case d: DynamicPruningSubquery => sides.contains(d.buildQuery.canonicalized)
      case _ => false
    }))
  }

  /** A filter that can drop rows (not only NULL checks, which every join key gets); under AQE, also
   * inside the plans of query stages already run. */
  private def hasSelectiveFilter(plan: LogicalPlan): Boolean = plan.exists {
    case Filter(condition, _) => splitConjunctivePredicates(condition).exists(!_.isInstanceOf[IsNotNull])
    case stage: LogicalQueryStage => hasSelectiveFilter(stage.logicalPlan)
    case _ => false
  }
}
