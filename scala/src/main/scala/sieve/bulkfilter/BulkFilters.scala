package sieve.bulkfilter

import org.apache.spark.sql.DataFrame

import sieve.ordering._

/**
 * The Scala builder, the same as Python's:
 * {{{
 *   import sieve.bulkfilter.BulkFilters._
 *   val tree = include("region", "regions.txt") | (include("brand", "brands.csv") & exclude("color", banned))
 *   val cars = tree.applyTo(carsDf)
 * }}}
 */
object BulkFilters {
  type Tree = FilterTree[LeafSpec]

  def include(column: String, path: String): Tree = leaf(include = true, column, PathSource(path, None), None)
  def exclude(column: String, path: String): Tree = leaf(include = false, column, PathSource(path, None), None)
  def include(column: String, values: DataFrame): Tree = leaf(include = true, column, frame(values), None)
  def exclude(column: String, values: DataFrame): Tree = leaf(include = false, column, frame(values), None)

  /** A leaf with every option: a path with an explicit format, and/or a named value column. */
  def leaf(include: Boolean, column: String, source: SourceSpec, valueColumn: Option[String]): Tree =
    Leaf(LeafSpec(include, column, source, valueColumn))

  def frame(values: DataFrame): SourceSpec = new FrameSource(values, s"DataFrame[${values.columns.mkString(", ")}]")

  private def andParts(t: Tree): Seq[Tree] = t match { case AllOf(cs) => cs; case _ => Seq(t) }
  private def orParts(t: Tree): Seq[Tree] = t match { case AnyOf(cs) => cs; case _ => Seq(t) }

  def allOf(children: Tree*): Tree = AllOf(children)
  def anyOf(children: Tree*): Tree = AnyOf(children)

  /** `a & b & c` is one AND of three (an explicit `allOf(allOf(a, b), c)` stays nested). */
  implicit class TreeOps(private val tree: Tree) extends AnyVal {
    def &(other: Tree): Tree = AllOf(andParts(tree) ++ andParts(other))
    def |(other: Tree): Tree = AnyOf(orParts(tree) ++ orParts(other))
    def applyTo(df: DataFrame): DataFrame = ApplyBulkFilter(df, tree)
  }
}
