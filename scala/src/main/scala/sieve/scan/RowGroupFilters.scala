package sieve.scan

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.internal.SQLConf

import sieve.scan.KeyPrunedFileIndex.RowGroup

/**
 * The row groups a Parquet scan's own filters leave it to read, known from footers before it runs: Spark's Parquet
 * reader skips a row group whose statistics rule out a filter, so a table sorted by a date and filtered to one
 * quarter reads one row group in ~28 (TPC-H orders sorted by date at sf1: 7 row groups in each of 4 files). The
 * filters understood are comparisons of an integral or date column with a literal; others may skip more.
 */
object RowGroupFilters extends PredicateHelper {
  /** A filter's column, and whether a row group whose statistics on it are `g` may hold a row that passes. */
  type Comparison = (Attribute, RowGroup => Boolean)

  /** Each of `scan`'s filters (NULL checks aside) as a [[Comparison]], or None for one that is not. */
  def comparisons(scan: FileSourceScanExec): Seq[Option[Comparison]] =
    scan.dataFilters.flatMap(splitConjunctivePredicates).filterNot(_.isInstanceOf[IsNotNull]).map(comparison)

  /** Whether row group `i` of the file `path` (of `n` row groups) of the scan below `plan` may hold a row passing
   * every one of `comparisons`, by the compared columns' statistics in its footer (a sample's beyond `maxFiles`);
   * None when a footer does not give them. A file whose footer gives a column other row groups keeps them. */
  def passes(plan: SparkPlan, comparisons: Seq[Comparison], maxFiles: Long, conf: SQLConf)
      : Option[(String, Int, Int) => Boolean] =
    sequence(comparisons.groupBy(_._1.exprId).values.toSeq.map { cs =>
      KeyScanPushdown.plannedRowGroupsByFile(plan, cs.head._1, maxFiles, conf)
        .map(groups => (groups, (g: RowGroup) => cs.forall(_._2(g))))
    }).map(tests => (path, i, n) => tests.forall { case (byFile, keeps) =>
      byFile.get(path).forall(g => g.length != n || keeps(g(i)))
    })

  /** The share of `scan`'s rows (its sampled footers) in the row groups its comparisons can keep; None when it has
   * none, or its footers do not say. */
  def keptShare(scan: FileSourceScanExec, maxFiles: Long, conf: SQLConf): Option[Double] = {
    val understood = comparisons(scan).flatten
    if (understood.isEmpty) None
    else for {
      groups <- KeyScanPushdown.plannedRowGroupsByFile(scan, understood.head._1, maxFiles, conf)
      pass <- passes(scan, understood, maxFiles, conf)
      rows = groups.values.flatten.map(_.rows).sum if rows > 0
    } yield groups.toSeq.flatMap { case (path, gs) => gs.indices.filter(pass(path, _, gs.length)).map(gs(_).rows) }
      .sum.toDouble / rows
  }

  def sequence[T](options: Seq[Option[T]]): Option[Seq[T]] =
    if (options.forall(_.isDefined)) Some(options.flatten) else None

  /** A comparison of an integral or date column with a literal: the column, and whether a row group whose
   * statistics on it are `g` may hold a row that passes (one of all NULLs holds none). */
  private def comparison(e: Expression): Option[Comparison] = {
    def value(l: Literal): Option[Long] = l.value match {
      case i: java.lang.Integer => Some(i.longValue)
      case l: java.lang.Long => Some(l.longValue)
      case s: java.lang.Short => Some(s.longValue)
      case b: java.lang.Byte => Some(b.longValue)
      case _ => None
    }
    def column(a: Attribute, l: Literal) = KeyPrunedFileIndex.supports(a.dataType) && a.dataType == l.dataType
    def test(a: Attribute, keeps: RowGroup => Boolean) = Some((a, (g: RowGroup) => g.hasValues && keeps(g)))
    e match {
      case EqualTo(a: Attribute, l: Literal) if column(a, l) => value(l).flatMap(v => test(a, g => g.min <= v && v <= g.max))
      case EqualTo(l: Literal, a: Attribute) if column(a, l) => comparison(EqualTo(a, l))
      case GreaterThan(a: Attribute, l: Literal) if column(a, l) => value(l).flatMap(v => test(a, _.max > v))
      case GreaterThanOrEqual(a: Attribute, l: Literal) if column(a, l) => value(l).flatMap(v => test(a, _.max >= v))
      case LessThan(a: Attribute, l: Literal) if column(a, l) => value(l).flatMap(v => test(a, _.min < v))
      case LessThanOrEqual(a: Attribute, l: Literal) if column(a, l) => value(l).flatMap(v => test(a, _.min <= v))
      case GreaterThan(l: Literal, a: Attribute) => comparison(LessThan(a, l))
      case GreaterThanOrEqual(l: Literal, a: Attribute) => comparison(LessThanOrEqual(a, l))
      case LessThan(l: Literal, a: Attribute) => comparison(GreaterThan(a, l))
      case LessThanOrEqual(l: Literal, a: Attribute) => comparison(GreaterThanOrEqual(a, l))
      case _ => None
    }
  }
}
