package sieve.bulkfilter

import org.apache.spark.TaskContext
import org.apache.spark.util.AccumulatorV2

import sieve.valueset.ValueSet
import sieve.ordering._

/**
 * The bulk-filter tree flattened into arrays, as a [[TreeEvaluator]] runs it: node 0 is the root; a
 * node is an AND, an OR or a leaf; `kids(n)` are a node's children in their starting (cost) order.
 */
final class TreePlan(tree: FilterTree[Int]) extends Serializable {
  private val nodes = scala.collection.mutable.ArrayBuffer.empty[FilterTree[Int]]
  private val children = scala.collection.mutable.ArrayBuffer.empty[Array[Int]]
  private def walk(t: FilterTree[Int]): Int = {
    val i = nodes.size
    nodes += t
    children += Array.emptyIntArray
    t match { case n: Node[Int] => children(i) = n.children.map(walk).toArray; case _ => }
    i
  }
  walk(tree)

  val size: Int = nodes.size
  val isAnd: Array[Boolean] = nodes.map(_.isInstanceOf[AllOf[_]]).toArray
  val leafOf: Array[Int] = nodes.map { case Leaf(l) => l; case _ => -1 }.toArray
  val kids: Array[Array[Int]] = children.toArray
  /** The number of leaves under each node (children come after their parent). */
  val leafCount: Array[Int] = {
    val counts = new Array[Int](size)
    (size - 1 to 0 by -1).foreach(n => counts(n) = if (leafOf(n) >= 0) 1 else kids(n).map(counts).sum)
    counts
  }
}

/**
 * Runs a [[TreeCondition]] row by row where its generated code does not inline it (large trees), and
 * measures the order on sampled rows where it does: the caller gives each row's mask columns and keys; a
 * value set is probed when a leaf on its column is first reached, once per row.
 *
 * Adaptive order (`adapt`): on the first `Sample` rows of every `Period` rows this task counts, for every
 * AND/OR child, evaluations, passes and cost (a probe of a value set counts 10, a bit test 1); at the
 * end of each sample each level is re-sorted — AND children by cost / (1 - pass rate), OR children by
 * cost / pass rate, as Velox orders its filters — and the counts halved, so the order follows the data.
 * The other rows run uncounted (in generated code, for a tree it inlines, following [[currentOrder]]).
 *
 * Memo (`memo`: large trees with no mask columns): the answer depends only on the ids of the row's keys in
 * their sets, and few id tuples occur (most keys are in no set), so every set is probed up front and a
 * tuple seen before is answered from a table instead of by walking thousands of nodes. Any order gives
 * the same answer, so adaptation does not invalidate it. Reordering is safe: every leaf is deterministic and
 * cannot raise. The task's totals go to `stats` when it ends (explain shows them).
 */
final class TreeEvaluator(condition: TreeCondition, plan: TreePlan, sets: Int => ValueSet, adapt: Boolean,
    stats: Option[TreeStats], memo: Boolean) {
  import TreeEvaluator._

  private val tests = condition.tests.toArray
  private val includes = condition.includes.toArray
  private val columns = condition.setColumns
  private val setArray = Array.tabulate(columns)(sets)
  private val words = Array.tabulate(columns)(condition.wordsOf)
  private val order = plan.kids.map(_.clone())
  // this row
  private var masks: Array[Long] = _
  private val ids = new Array[Int](columns)
  private val longKeys = new Array[Long](columns)
  private val keyBase = new Array[AnyRef](columns)
  private val keyOffset = new Array[Long](columns)
  private val keyLength = new Array[Int](columns)
  private val isLong = Array.tabulate(columns)(c => condition.kindOf(c) == sieve.valueset.ValueKey.Integral)
  // a column whose leaves have bitmaps of their own: the generated code tests each leaf with one load,
  // whichever leaf of the column comes first, so each test counts the same (no first-probe cost)
  private val ownBitmaps = Array.tabulate(columns)(c => setArray(c) != null && setArray(c).leafBitmaps != null)
  // adaptation: decayed counts that order the levels, and totals for explain
  private var cost = 0L
  private var rows = 0L
  private val evals, passes, costs = new Array[Double](plan.size)
  private val totalEvals, totalPasses, totalCosts = new Array[Long](plan.size)

  stats.foreach { acc =>
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => acc.add(totals())))
  }

  def setNull(c: Int): Unit = ids(c) = -1
  def setLong(c: Int, v: Long): Unit = { longKeys(c) = v; ids(c) = -2 }
  def setBytes(c: Int, base: AnyRef, offset: Long, length: Int): Unit = {
    keyBase(c) = base; keyOffset(c) = offset; keyLength(c) = length; ids(c) = -2
  }

  private val answers = if (memo) new IdTupleMemo(columns) else null

  def test(rowMasks: Array[Long]): Boolean =
    if (sampling()) measured(rowMasks)
    else if (answers != null) {
      masks = rowMasks
      var c = 0
      while (c < columns) { if (ids(c) == -2) ids(c) = probe(c); c += 1 }
      val known = answers.get(ids)
      if (known >= 0) known == 1
      else { val r = run(0); answers.put(ids, r); r }
    } else { masks = rowMasks; run(0) }

  /** Counts a row; true when the order adapts and the row is one it is measured on ([[measured]]). */
  def sampling(): Boolean = adapt && { val inPeriod = rows % Period; rows += 1; inPeriod < Sample }

  /** A sampled row's answer, counted; the levels re-sorted after the sample's last row. */
  def measured(rowMasks: Array[Long]): Boolean = {
    masks = rowMasks
    val r = runCounted(0)
    if (rows % Period == Sample) resort()
    r
  }

  /** Each node's children in the current order (re-sorting replaces a node's array): the order the
   * generated code of an adaptive tree follows on the rows not sampled. */
  def currentOrder: Array[Array[Int]] = order

  private def probe(c: Int): Int =
    if (isLong(c)) setArray(c).idOfLong(longKeys(c)) else setArray(c).idOfBytes(keyBase(c), keyOffset(c), keyLength(c))

  /** Also what the interpreted path uses: keys given as evaluated values. */
  def setValue(c: Int, value: Any): Unit =
    if (value == null) setNull(c)
    else if (isLong(c)) setLong(c, sieve.valueset.ValueKey.toLong(value))
    else { ids(c) = sieve.valueset.ValueKey.idOf(condition.kindOf(c), value, setArray(c)) }

  private def run(n: Int): Boolean = {
    val l = plan.leafOf(n)
    if (l >= 0) leaf(l)
    else {
      val ks = order(n)
      var i = 0
      if (plan.isAnd(n)) { while (i < ks.length) { if (!run(ks(i))) return false; i += 1 }; true }
      else { while (i < ks.length) { if (run(ks(i))) return true; i += 1 }; false }
    }
  }

  private def runCounted(n: Int): Boolean = {
    val l = plan.leafOf(n)
    if (l >= 0) leaf(l)
    else {
      val ks = order(n)
      val stopOn = !plan.isAnd(n)
      var i = 0
      while (i < ks.length) {
        val k = ks(i)
        val before = cost
        val r = runCounted(k)
        evals(k) += 1; totalEvals(k) += 1
        if (r) { passes(k) += 1; totalPasses(k) += 1 }
        costs(k) += cost - before; totalCosts(k) += cost - before
        if (r == stopOn) return stopOn
        i += 1
      }
      !stopOn
    }
  }

  private def leaf(l: Int): Boolean = tests(l) match {
    case MaskBit(m, bit) => cost += 1; ((masks(m) & (1L << bit)) != 0) == includes(l)
    case SetBit(c, bit) =>
      var id = ids(c)
      if (id == -2) {
        cost += (if (ownBitmaps(c)) 1 else ProbeCost)
        id = probe(c)
        ids(c) = id
      } else cost += 1
      (id >= 0 && (setArray(c).masks(id * words(c) + bit / 64) & (1L << bit)) != 0) == includes(l)
    case Undecided => true
  }

  private def resort(): Unit = {
    var n = 0
    while (n < plan.size) {
      if (plan.leafOf(n) < 0 && order(n).length > 1) {
        val and = plan.isAnd(n)
        order(n) = order(n).sortBy(k => rank(k, and)) // stable: ties keep their order
      }
      n += 1
    }
    var k = 0
    while (k < plan.size) { evals(k) /= 2; passes(k) /= 2; costs(k) /= 2; k += 1 }
  }

  private def rank(k: Int, and: Boolean): Double = TreeEvaluator.rank(evals(k), passes(k), costs(k), and)

  /** This task's evaluations, passes and cost per node, in [[TreeStats]]' layout. */
  def totals(): Array[Long] = totalEvals ++ totalPasses ++ totalCosts
}

object TreeEvaluator {
  val Period = 65536
  val Sample = 512
  val ProbeCost = 10L

  /** A child's place in its level: AND children that reject cheaply first, OR children that accept
   * cheaply first (cost per evaluation over the rate of the decisive answer). A child not run yet goes
   * first, to be measured (behind a child that decides every row, it would never be). */
  def rank(evals: Double, passes: Double, cost: Double, and: Boolean): Double =
    if (evals == 0) 0.0
    else {
      val pass = passes / evals
      (cost / evals) / math.max(if (and) 1 - pass else pass, 1e-9)
    }

  /** The tree in the order its tasks' measurements give, each node with its measured pass rate. */
  def settled(plan: TreePlan, stats: TreeStats, labels: Seq[String]): String = {
    def rate(n: Int) =
      if (stats.evals(n) == 0) "not run" else f"pass ${stats.passes(n).toDouble / stats.evals(n)}%.3g"
    def render(n: Int): String = plan.leafOf(n) match {
      case l if l >= 0 => s"${labels(l)}[${rate(n)}]"
      case _ =>
        val and = plan.isAnd(n)
        val kids = plan.kids(n).sortBy(k => rank(stats.evals(k).toDouble, stats.passes(k).toDouble, stats.cost(k).toDouble, and))
        kids.map(render).mkString("(", if (and) " and " else " or ", ")") + (if (n == 0) "" else s"[${rate(n)}]")
    }
    render(0)
  }
}

/** Answers by tuple of set ids: open addressing over `Capacity` tuples, emptied when half full. */
final class IdTupleMemo(columns: Int) {
  import IdTupleMemo.Capacity
  private val keys = new Array[Int](Capacity * columns)
  private val answers = new Array[Byte](Capacity) // 0: empty, 1: false, 2: true
  private var count = 0

  /** 1 (true), 0 (false), or -1 when `ids` was not seen. */
  def get(ids: Array[Int]): Int = { val i = slot(ids); if (answers(i) == 0) -1 else answers(i) - 1 }

  def put(ids: Array[Int], answer: Boolean): Unit = {
    if (count * 2 >= Capacity) { java.util.Arrays.fill(answers, 0.toByte); count = 0 }
    val i = slot(ids)
    if (answers(i) == 0) {
      System.arraycopy(ids, 0, keys, i * columns, columns)
      answers(i) = if (answer) 2 else 1
      count += 1
    }
  }

  private def slot(ids: Array[Int]): Int = {
    var h = 17L
    var c = 0
    while (c < columns) { h = h * 31 + ids(c); c += 1 }
    var i = (sieve.membership.KeyHash.ofLong(h) >>> 40).toInt & (Capacity - 1)
    while (answers(i) != 0 && !same(i, ids)) i = (i + 1) & (Capacity - 1)
    i
  }

  private def same(i: Int, ids: Array[Int]): Boolean = {
    var c = 0
    while (c < columns) { if (keys(i * columns + c) != ids(c)) return false; c += 1 }
    true
  }
}

object IdTupleMemo {
  val Capacity: Int = 1 << 14
}

/** Evaluations, passes and cost per node of one tree, summed over tasks (3 x nodes longs). */
final class TreeStats(nodes: Int) extends AccumulatorV2[Array[Long], Array[Long]] {
  private var sums = new Array[Long](3 * nodes)
  override def isZero: Boolean = sums.forall(_ == 0)
  override def copy(): TreeStats = { val c = new TreeStats(nodes); c.sums = sums.clone(); c }
  override def reset(): Unit = sums = new Array[Long](3 * nodes)
  override def add(v: Array[Long]): Unit = { var i = 0; while (i < sums.length) { sums(i) += v(i); i += 1 } }
  override def merge(other: AccumulatorV2[Array[Long], Array[Long]]): Unit = add(other.value)
  override def value: Array[Long] = sums

  def evals(n: Int): Long = sums(n)
  def passes(n: Int): Long = sums(nodes + n)
  def cost(n: Int): Long = sums(2 * nodes + n)
}
