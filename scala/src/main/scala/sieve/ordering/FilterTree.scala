package sieve.ordering

/**
 * A bulk-filter tree: AND/OR nodes over include/exclude leaves. `L` is what a leaf holds: a
 * [[LeafSpec]] as the user wrote it, or an index into a [[BulkFilter]] node's resolved leaves.
 */
sealed trait FilterTree[L] {
  def leaves: Seq[L] = this match {
    case Leaf(l) => Seq(l)
    case n: Node[L] => n.children.flatMap(_.leaves)
  }

  def map[M](f: L => M): FilterTree[M] = this match {
    case Leaf(l) => Leaf(f(l))
    case AllOf(cs) => AllOf(cs.map(_.map(f)))
    case AnyOf(cs) => AnyOf(cs.map(_.map(f)))
  }

  /** The same tree with each leaf replaced by its position in `leaves`. */
  def leafIndexes: FilterTree[Int] = {
    var next = -1
    map { _ => next += 1; next }
  }

  /** `(a and (b or c))` style text, with `show` naming each leaf. */
  def render(show: L => String): String = this match {
    case Leaf(l) => show(l)
    case n: Node[L] => n.children.map(c => c.render(show)).mkString("(", s" ${n.opName} ", ")")
  }
}

final case class Leaf[L](leaf: L) extends FilterTree[L]

sealed trait Node[L] extends FilterTree[L] {
  def children: Seq[FilterTree[L]]
  def opName: String
  def withChildren(cs: Seq[FilterTree[L]]): Node[L]
}

final case class AllOf[L](children: Seq[FilterTree[L]]) extends Node[L] {
  def opName = "and"
  def withChildren(cs: Seq[FilterTree[L]]): Node[L] = AllOf(cs)
}

final case class AnyOf[L](children: Seq[FilterTree[L]]) extends Node[L] {
  def opName = "or"
  def withChildren(cs: Seq[FilterTree[L]]): Node[L] = AnyOf(cs)
}

/** Where a leaf's values come from: a path (file or directory) or a DataFrame. */
sealed trait SourceSpec { def describe: String }
final case class PathSource(path: String, format: Option[String]) extends SourceSpec {
  def describe: String = path
}
/** Equal when they hold the same DataFrame object, so a frame used twice is read once. */
final class FrameSource(val frame: org.apache.spark.sql.DataFrame, val label: String) extends SourceSpec {
  def describe: String = label
  override def equals(o: Any): Boolean = o match {
    case f: FrameSource => f.frame eq frame
    case _ => false
  }
  override def hashCode: Int = System.identityHashCode(frame)
}

/** A leaf as written: keep rows whose `column` is (include) or is not (exclude) among the values. */
final case class LeafSpec(include: Boolean, column: String, source: SourceSpec, valueColumn: Option[String]) {
  def describe: String = s"${if (include) "include" else "exclude"}($column, ${source.describe})"
}
