package sieve.bulkfilter

import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.ordering._

/** The order a [[BulkFilter]] runs in and how each key column is tested, shared by [[LowerBulkFilters]]
 * and explain. */
object BulkFilterOrder {
  def reorderEnabled(conf: SQLConf): Boolean =
    SieveConf.enabled(conf) && SieveConf.BULK_FILTER_ENABLED.get(conf)

  def model(bf: BulkFilter, conf: SQLConf): CostModel =
    if (!reorderEnabled(conf)) WrittenOrder
    else if (SieveConf.placeEveryFilter(conf)) new HashOrder(i => bf.labels(i).hashCode)
    else SieveConf.BULK_FILTER_COST_MODEL.get(conf) match {
      case "stats" => new StatsCostModel(bf.estimates)
      case _ => SeedCostModel
    }

  def chosenTree(bf: BulkFilter, conf: SQLConf): FilterTree[Int] = model(bf, conf).reorder(bf.tree)

  /** Leaves grouped by key column (and the type it is compared in: one value set or table per type), the
   * columns in the order their first leaf appears in `tree`. */
  def columnsInOrder(bf: BulkFilter, tree: FilterTree[Int]): Seq[Seq[Int]] = {
    val leaves = tree.leaves
    def column(l: Int) = (bf.keys(l).exprId, bf.valueOf(bf.leafSources(l)).dataType)
    val byColumn = leaves.groupBy(column)
    leaves.map(column).distinct.map(byColumn)
  }

  /** The columns tested against in-memory value sets (their sources within
   * `spark.sieve.bulkFilter.maxSetBytes`), and those joined with their values. */
  def setsAndJoins(bf: BulkFilter, tree: FilterTree[Int], conf: SQLConf): (Seq[Seq[Int]], Seq[Seq[Int]]) =
  {
    val max = SieveConf.BULK_FILTER_MAX_SET_BYTES.get(conf)
    columnsInOrder(bf, tree).partition(leaves => max > 0 && sourceBytes(bf, leaves) <= max)
  }

  /** The bytes of the sources of `leaves`, each read or file counted once. */
  def sourceBytes(bf: BulkFilter, leaves: Seq[Int]): BigInt =
    leaves.map(l => (bf.leafSources(l), bf.leafFiles(l)) -> BigInt(bf.leafBytes(l))).toMap.values.sum

  /** What `spark_sieve.explain` prints for one node: the tree as written and as run, with costs. */
  def explain(bf: BulkFilter, conf: SQLConf): String = {
    val costs = model(bf, conf)
    val chosen = costs.reorder(bf.tree)
    val (sets, joins) = setsAndJoins(bf, chosen, conf)
    def name(ls: Seq[Int]) = s"${bf.keys(ls.head).name} (${ls.size} leaves"
    val setText = if (sets.isEmpty) "none" else sets.map(ls => name(ls) + ")").mkString(", ")
    val joinText = if (joins.isEmpty) "none" else joins.map { ls =>
      val bytes = sourceBytes(bf, ls)
      name(ls) + (if (bytes >= Long.MaxValue) ", size unknown)" else s", ${readable(bytes)})")
    }.mkString(" -> ") + s" (above spark.sieve.bulkFilter.maxSetBytes = " +
      s"${readable(SieveConf.BULK_FILTER_MAX_SET_BYTES.get(conf))})"
    Seq(
      s"BulkFilter: ${bf.tree.leaves.size} leaves over ${bf.sources.size} value sources",
      s"  cost model: ${costs.name}",
      s"  as written: ${costs.render(bf.tree, bf.labels)}",
      s"  as run:     ${costs.render(chosen, bf.labels)}",
      s"  value sets: $setText",
      s"  joins:      $joinText"
    ).mkString("\n")
  }

  private def readable(bytes: BigInt): String =
    Seq("GiB" -> 30, "MiB" -> 20, "KiB" -> 10).collectFirst {
      case (unit, shift) if bytes >= (BigInt(1) << shift) => f"${bytes.toDouble / (1L << shift)}%.1f $unit"
    }.getOrElse(s"$bytes B")
}
