package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, BitOrAgg, Complete}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.{ExistenceJoin, Inner, LeftAnti, LeftOuter, LeftSemi}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.{BooleanType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import sieve.plan.Preconditions
import sieve.config.SieveConf
import sieve.ordering._

/**
 * Replaces each [[BulkFilter]] node with what runs it, so the plan does not grow with the number of
 * leaves. A key column whose value sources fit `spark.sieve.bulkFilter.maxSetBytes` is tested against an
 * in-memory set of its values: the tree becomes ONE [[SetFilter]] over the input (no join, no
 * aggregation; the sets are built at run time). A column above the bound keeps a join: all its sources
 * become one table `value -> bitmasks` (bit i set when leaf i holds the value), joined once (left outer:
 * a key with no match gets empty masks); joins run first, in cost order, and after each a filter drops
 * the rows the tree already rejects whatever the columns not yet tested say — the seed's "AND passes its
 * filtered data on", generalised to OR. Both evaluate the tree as one [[TreeCondition]].
 * Input rows are never duplicated (values are unique per table) nor de-duplicated (no DISTINCT).
 *
 * With spark.sieve.enabled or spark.sieve.bulkFilter.enabled off, the tree runs in written order.
 * The node cannot be left in the plan (nothing else executes it), so this rule always lowers it. It also
 * pushes a filter that cannot raise below a SetFilter (Spark pushes filters below joins, not below a
 * node it does not know), so that it reaches the scan.
 */
object LowerBulkFilters extends Rule[LogicalPlan] {
  private val MaskBits = 64
  private val SingleTaskValueBytes = BigInt(16L << 20)

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case bf: BulkFilter => lower(bf, BulkFilterOrder.chosenTree(bf, conf))
    case Filter(condition, f: SetFilter)
        if Preconditions.deterministic(condition) && Preconditions.cannotRaise(condition) &&
          condition.references.subsetOf(f.child.outputSet) =>
      f.copy(child = Filter(condition, f.child))
  }

  /** Where leaf i's bit lives: mask column `group` of its key column's table, bit `bit`. */
  private case class Slot(group: Int, bit: Int)

  private def lower(bf: BulkFilter, tree: FilterTree[Int]): LogicalPlan = {
    // filled in as joins and sets are chosen; each TreeCondition gets a copy (toVector: on Scala 2.12 an
    // Array's toSeq is a view, and a condition made before the sets would see their later SetBits)
    val tests = Array.fill[LeafTest](bf.keys.size)(Undecided)
    var conditionInputs = Seq.empty[Expression]
    val conjuncts = topLevelConjuncts(tree)
    val (setColumns, joinColumns) = BulkFilterOrder.setsAndJoins(bf, tree, conf)
    val joined = joinColumns.foldLeft(bf.child) { (input, leaves) =>
      val key = bf.keys(leaves.head)
      val compared = bf.compareKey(leaves.head)
      val join = leaves match {
        case Seq(leaf) =>
          // One leaf on this column: its values as they are, no table of masks to build.
          val source = bf.leafSources(leaf)
          val values = Project(Seq(bf.valueOf(source)), bf.sources(source))
          val on = Some(EqualTo(compared, bf.valueOf(source)))
          tests(leaf) = MaskBit(conditionInputs.size, 0)
          if (conjuncts(leaf)) {
            // a top-level AND conjunct: a semi / anti join, and the leaf holds for every row left
            conditionInputs :+= Literal(if (bf.leafIncludes(leaf)) 1L else 0L)
            Join(input, values, if (bf.leafIncludes(leaf)) LeftSemi else LeftAnti, on, hint(values))
          } else {
            val mark = AttributeReference(s"sieve_${key.name}_mark", BooleanType, nullable = false)()
            conditionInputs :+= If(mark, Literal(1L), Literal(0L))
            Join(input, values, ExistenceJoin(mark), on, hint(values))
          }
        case _ =>
          val slots = leaves.zipWithIndex.map { case (leaf, i) => leaf -> Slot(i / MaskBits, i % MaskBits) }.toMap
          val (table, value, masks) = valueTable(bf, leaves, slots)
          leaves.foreach(leaf => tests(leaf) = MaskBit(conditionInputs.size + slots(leaf).group, slots(leaf).bit))
          conditionInputs ++= masks
          Join(input, table, LeftOuter, Some(EqualTo(compared, value)), hint(table))
      }
      // A semi / anti join decides only its own leaf, true for every row it keeps: the tree can reject
      // no row the last filter kept, so no filter follows it.
      val semiOrAnti = leaves.size == 1 && conjuncts(leaves.head)
      if (!semiOrAnti && couldBeDecided(tree, tests)) {
        Filter(TreeCondition(tree, tests.toVector, bf.leafIncludes, conditionInputs, conditionInputs.size), join)
      } else join
    }
    val filtered = if (setColumns.isEmpty) joined else setFilter(bf, tree, setColumns, tests, conditionInputs, joined)
    Project(bf.child.output, filtered)
  }

  /** One filter testing the leaves of `columns` against their value sets (and the joined leaves by their
   * mask columns `maskInputs`). Text files it reads itself, each once for all the sets it feeds; its other
   * sources are those of the set columns, renumbered. */
  private def setFilter(bf: BulkFilter, tree: FilterTree[Int], columns: Seq[Seq[Int]], tests: Array[LeafTest],
      maskInputs: Seq[Expression], input: LogicalPlan): SetFilter = {
    val isText = (s: Int) => bf.textFiles(s).nonEmpty
    val used = columns.flatten.map(bf.leafSources).filterNot(isText).distinct.sorted
    val textTargets = Seq.newBuilder[(String, Long, TextTarget)]
    val specs = columns.zipWithIndex.map { case (leaves, c) =>
      leaves.zipWithIndex.foreach { case (leaf, bit) => tests(leaf) = SetBit(c, bit) }
      def mask(owners: Seq[Int]): Seq[Long] = (0 to (leaves.size - 1) / MaskBits).map { w =>
        owners.map(leaves.indexOf(_)).filter(_ / MaskBits == w).map(b => 1L << (b % MaskBits)).foldLeft(0L)(_ | _)
      }
      val valueType = bf.valueOf(bf.leafSources(leaves.head)).dataType
      val (text, read) = leaves.partition(l => isText(bf.leafSources(l)))
      // a leaf of a one-file read owns that file; of a shared read, its own files of it
      text.flatMap { l =>
        val files = bf.textFiles(bf.leafSources(l))
        val owned = if (bf.leafFiles(l).isEmpty) files else files.filter(f => bf.leafFiles(l).contains(f._1))
        owned.map(_ -> l)
      }.groupBy(_._1).toSeq.sortBy(_._1._1).foreach { case ((path, length), owners) =>
        textTargets += ((path, length, TextTarget(c, bf.comparisons(bf.leafSources(owners.head._2)), bf.keys(leaves.head).name,
          mask(owners.map(_._2).distinct))))
      }
      val branches = read.groupBy(bf.leafSources).toSeq.sortBy(_._1).map { case (source, sharing) =>
        if (sharing.forall(bf.leafFiles(_).isEmpty)) SetBranch(used.indexOf(source), mask(sharing), Map.empty)
        else {
          val byFile = sharing.flatMap(l => bf.leafFiles(l).map(_ -> l)).groupBy(_._1)
          SetBranch(used.indexOf(source), Nil, byFile.map { case (f, owners) => f -> mask(owners.map(_._2).distinct) })
        }
      }
      ValueSetSpec(bf.keys(leaves.head).name, valueType, (leaves.size - 1) / MaskBits + 1, branches, leaves.map(bf.labels))
    }
    val textFiles = textTargets.result().groupBy(t => (t._1, t._2)).toSeq.sortBy(_._1._1).map {
      case ((path, length), targets) => TextValueFile(path, length, targets.map(_._3))
    }
    val keys = columns.map(leaves => ValueComparison.canonical(bf.compareKey(leaves.head)))
    val condition = TreeCondition(tree, tests.toVector, bf.leafIncludes, maskInputs ++ keys, maskInputs.size)
    SetFilter(condition, specs, textFiles, bf.labels, input, used.map(bf.sources))
  }

  /** Leaves that are the whole tree or direct children of a root AND. */
  private def topLevelConjuncts(tree: FilterTree[Int]): Set[Int] = tree match {
    case Leaf(l) => Set(l)
    case AllOf(cs) => cs.collect { case Leaf(l) => l }.toSet
    case _ => Set.empty
  }

  /** Broadcast a value table whose sources are small enough (Spark's own estimate of an aggregated
   * table is often far above its real size, and would shuffle the whole input instead). */
  private def hint(values: LogicalPlan): JoinHint =
    if (values.stats.sizeInBytes <= SieveConf.BULK_FILTER_BROADCAST_BYTES.get(conf)) {
      JoinHint(None, Some(HintInfo(strategy = Some(BROADCAST))))
    } else JoinHint.NONE

  /** False when no row can be rejected yet: an OR with a child that has no joined leaf is still true. */
  private def couldBeDecided(tree: FilterTree[Int], tests: Array[LeafTest]): Boolean = {
    def alwaysTrue(t: FilterTree[Int]): Boolean = t match {
      case Leaf(l) => tests(l) == Undecided
      case AllOf(cs) => cs.forall(alwaysTrue)
      case AnyOf(cs) => cs.exists(alwaysTrue)
    }
    !alwaysTrue(tree)
  }

  /**
   * One row per distinct value of the column's sources, with the OR of the bits of the leaves that
   * hold it: a branch per source read, then grouped. A read shared by leaves (a tagged scan of many
   * text files, or one file two leaves use) is scanned once; its rows get their bits from a small
   * `file -> masks` table, or constant bits when every row belongs to every leaf using it.
   */
  private def valueTable(bf: BulkFilter, leaves: Seq[Int], slots: Map[Int, Slot])
      : (LogicalPlan, Attribute, Seq[Attribute]) = {
    val groups = slots.values.map(_.group).max + 1
    def masks(ls: Seq[Int]): Seq[Long] = (0 until groups).map { g =>
      ls.map(slots).filter(_.group == g).map(s => 1L << s.bit).foldLeft(0L)(_ | _)
    }
    val branches = leaves.groupBy(bf.leafSources).toSeq.sortBy(_._1).map { case (source, sharing) =>
      val value = Alias(bf.valueOf(source), "v")()
      val source_ = bf.sources(source)
      if (sharing.forall(bf.leafFiles(_).isEmpty)) {
        val maskCols = masks(sharing).zipWithIndex.map { case (b, g) => Alias(Literal(b, LongType), s"m$g")() }
        Project(value +: maskCols, source_)
      } else {
        val file = AttributeReference("sieve_file", StringType, nullable = false)()
        val maskAttrs = (0 until groups).map(g => AttributeReference(s"m$g", LongType, nullable = false)())
        val byFile = sharing.flatMap(l => bf.leafFiles(l).map(_ -> l)).groupBy(_._1)
        val rows = byFile.toSeq.sortBy(_._1).map { case (f, owners) =>
          InternalRow.fromSeq(UTF8String.fromString(f) +: masks(owners.map(_._2).distinct))
        }
        val fileMasks = LocalRelation(file +: maskAttrs, rows)
        val tagged = Join(source_, fileMasks, Inner, Some(EqualTo(bf.fileOf(source), file)), JoinHint.NONE)
        Project(value +: maskAttrs, tagged)
      }
    }
    val union = if (branches.size == 1) branches.head else Union(branches)
    val v = union.output.head
    val aggregates = union.output.tail.map { m =>
      Alias(AggregateExpression(BitOrAgg(m), Complete, isDistinct = false), m.name)()
    }
    val values = Alias(v, s"sieve_${bf.keys(leaves.head).name}")()
    // A value table that fits in one task is built in one, without a shuffle before its broadcast.
    val input = if (union.stats.sizeInBytes <= SingleTaskValueBytes) Repartition(1, shuffle = false, union) else union
    val table = Aggregate(Seq(v), values +: aggregates, input)
    (table, values.toAttribute, aggregates.map(_.toAttribute))
  }
}
