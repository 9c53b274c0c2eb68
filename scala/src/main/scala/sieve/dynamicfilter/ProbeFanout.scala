package sieve.dynamicfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeExec, ReusedExchangeExec}
import org.apache.spark.sql.execution.joins.HashedRelationBroadcastMode
import org.apache.spark.sql.internal.SQLConf

import sieve.plan.PlanMemo
import sieve.scan.KeyScanPushdown

/**
 * The rows that the broadcast joins probing a scan's rows before a shuffle ([[KeyLineage.Route.probes]]) make of
 * each of them, expected from what is known once their broadcasts have run: each build side's rows, its distinct
 * keys and their range (read from the relation on the driver), against the probed key column's values in the
 * scan's footers. A probed row matches as [[KeepEstimate]] says of those keys; an inner join then makes as many
 * rows of it as a key has build rows (TPC-DS q95 at sf1: web_sales joined to itself on the order number, 12 rows
 * of each, all shuffled), a semi join one. None when one is not known: a broadcast still to run, a key of several
 * columns, not a long column of the scan.
 */
object ProbeFanout {
  /** The expected rows the `probes` (the nearest first) make of each of `scan`'s rows. */
  def apply(scan: SparkPlan, probes: Seq[KeyLineage.Probe], maxFiles: Long, conf: SQLConf): Option[Double] =
    probes.foldLeft(Option(1.0))((so, p) => so.flatMap(rows => perRow(scan, p, maxFiles, conf).map(rows * _)))

  private def perRow(scan: SparkPlan, p: KeyLineage.Probe, maxFiles: Long, conf: SQLConf): Option[Double] =
    (p.probed, FilterPlans.stageOf(p.broadcast)) match {
      case (Seq(key: Attribute), Some(stage)) if stage.isMaterialized && p.buildKeys.size == 1 =>
        for {
          build <- buildKeys(stage)
          groups <- KeyScanPushdown.plannedRowGroups(scan, key, maxFiles, conf)
          matched <- KeepEstimate.of(build.distinct.toDouble, build.min, build.max, groups)
        } yield if (p.inner) matched * build.rows / build.distinct else matched
      case _ => None
    }

  /** A built broadcast's rows, distinct keys and their range (None: not a long key, or no key). */
  final case class BuildKeys(rows: Long, distinct: Long, min: Long, max: Long)

  // (a stage's relation is built once: AQE's every plan holds the same stage, and asks again)
  private val buildKeys = new PlanMemo.NodeMemo[QueryStageExec, Option[BuildKeys]]("sieve.buildKeys", stage =>
    for {
      rows <- stage.getRuntimeStatistics.rowCount
      relationKeys <- hashedKeys(stage.plan)
      keys <- KeyCollector.broadcastRange(Seq(KeyCollector.Source(stage, relationKeys, broadcast = true)))
      if keys.rows > 0
    } yield BuildKeys(rows.toLong, keys.rows, keys.min, keys.max))

  /** The keys a broadcast's hashed relation is built on (the build keys of every join that reads it). */
  private def hashedKeys(plan: SparkPlan): Option[Seq[Expression]] = plan match {
    case r: ReusedExchangeExec => hashedKeys(r.child)
    case b: BroadcastExchangeExec => Some(b.mode).collect { case HashedRelationBroadcastMode(keys, false) => keys }
    case _ => None
  }
}
