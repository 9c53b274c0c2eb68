package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Expression, IsNotNull, PredicateHelper, SubqueryExpression}
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
 * The "dynamic filter metadata" rule (seeds/002): under each equi-join that can drop rows of one side
 * (the application side) by the keys of the other (the creation side) — inner joins (the larger side),
 * left-semi joins (the left side), the non-preserved side of outer joins — puts a [[DynamicFilter]]
 * directly on the application side when it is safe and pays off:
 *  - safe ([[Preconditions]]): every key's type is binary-stable and every key deterministic, and the
 *    creation side is shared for certain (exchange reuse on, deterministic);
 *  - the application side is a file scan under projections and filters without subqueries (a
 *    subquery filter becomes a join later, and the filter would end up above it) estimated at
 *    `minApplicationBytes` or more;
 *  - the creation side is filtered, or `minSizeRatio` times smaller;
 *  - no key is a partition column of the scan when dynamic partition pruning is on (DPP's job).
 * Runs once, late (Spark's pre-CBO batch, after predicate pushdown has settled), and is idempotent.
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
      }.getOrElse(j)
    case _ => j
  }

  private def safeKeys(keys: Seq[Expression]): Boolean =
    keys.forall(k => Preconditions.deterministic(k) && Preconditions.binaryStable(k.dataType))

  /** Which sides may be filtered (true = left), the preferred one first. */
  private def applicationSides(joinType: JoinType, left: LogicalPlan, right: LogicalPlan): Seq[Boolean] =
    joinType match {
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

  /** The file relation under `plan` when `plan` is only projections and filters over it, with no
   * subquery (it would become a join under the filter) and nothing nondeterministic. */
  private def fileScan(plan: LogicalPlan): Option[HadoopFsRelation] = plan match {
    case p @ Project(_, child) if plain(p) => fileScan(child)
    case f @ Filter(_, child) if plain(f) => fileScan(child)
    case LogicalRelation(fs: HadoopFsRelation, _, _, _, _) => Some(fs)
    case _ => None
  }

  private def plain(p: LogicalPlan): Boolean =
    p.expressions.forall(e => Preconditions.deterministic(e) && !SubqueryExpression.hasSubquery(e))

  /** A filter that can drop rows (not only NULL checks, which every join key gets); under AQE, also
   * inside the plans of query stages already run. */
  private def hasSelectiveFilter(plan: LogicalPlan): Boolean = plan.exists {
    case Filter(condition, _) => splitConjunctivePredicates(condition).exists(!_.isInstanceOf[IsNotNull])
    case stage: LogicalQueryStage => hasSelectiveFilter(stage.logicalPlan)
    case _ => false
  }
}
