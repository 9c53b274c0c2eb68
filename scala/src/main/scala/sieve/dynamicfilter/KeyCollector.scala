package sieve.dynamicfilter

import scala.reflect.ClassTag
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

import org.apache.spark.sql.catalyst.expressions.{BindReferences, BoundReference, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.execution.{InputAdapter, SparkPlan}
import org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec
import org.apache.spark.sql.execution.joins.SieveBroadcastKeys
import org.apache.spark.sql.internal.SQLConf

import sieve.config.SieveConf
import sieve.keyset._
import sieve.membership.{KeyShape, LongBitmap}

/**
 * Reads the creation side's join keys from what the join itself computes — the broadcast relation
 * (on the driver, where it was built) or the shuffle output (a job over the shuffle files the join
 * will read again) — and chooses the filter: the exact set when the keys fit the limits, else (a
 * second pass over the same keys) a bitmap for dense long keys or a bloom filter with the range.
 * Within one execution, the same creation side is read once however many scans its keys filter. A
 * filter fed by several creation sides gets the union of their keys, chosen as one.
 */
object KeyCollector extends Logging {
  final case class Limits(maxKeys: Long, maxKeyBytes: Long, maxBloomBytes: Long, fpp: Double)

  object Limits {
    /** The session's limits: `maxInSetSize`, `maxKeyBytes`, `maxBloomBytes`, `bloomFpp`. */
    def from(conf: SQLConf): Limits = Limits(
      SieveConf.DYNAMIC_FILTER_MAX_IN_SET_SIZE.get(conf), SieveConf.DYNAMIC_FILTER_MAX_KEY_BYTES.get(conf),
      SieveConf.DYNAMIC_FILTER_MAX_BLOOM_BYTES.get(conf), SieveConf.DYNAMIC_FILTER_BLOOM_FPP.get(conf))
  }

  /** A creation side: the exchange its join reads, the join's keys over it (all of them: a broadcast relation is
   * read by all), whether it is a broadcast, and `picks`, the positions in `keys` of those the filter reads (a
   * filter on some columns of a composite key keeps every row that can match: [[KeyLineage]]). `awaited`: as a
   * filter is placed, another filter of the plan reads the same keys already, so they are waited for and
   * collected anyway ([[DynamicFilterBenefit.leastScanBytes]]; not kept in a placed filter). */
  final case class Source(creation: SparkPlan, keys: Seq[Expression], broadcast: Boolean, picks: Seq[Int],
      awaited: Boolean = false) {
    /** The keys the filter reads. */
    def read: Seq[Expression] = picks.map(keys)
    def all: Boolean = picks == keys.indices
    /** Whether its keys are computed by a job running its operators again ([[ComputedKeys]]). */
    def computed: Boolean = ComputedKeys.unapply(creation).isDefined
    def kind: String = if (broadcast) "broadcast" else if (computed) "computed from a shuffle" else "shuffle"
    // not the case class's, which prints the creation side's whole tree: Spark's formatted explain (the UI's,
    // made again at each of AQE's plans) prints a DynamicFilterExec's arguments, and nested filters multiply it
    override def toString: String = s"${read.mkString("[", ", ", "]")} ($kind)"
  }
  object Source {
    def apply(creation: SparkPlan, keys: Seq[Expression], broadcast: Boolean): Source =
      Source(creation, keys, broadcast, keys.indices)
  }

  /** How many times a creation side's keys were read (not found among the recent key sets). */
  val reads = new java.util.concurrent.atomic.AtomicLong()

  private final class Once(read: => Option[KeySet]) { lazy val keySet: Option[KeySet] = read }

  // The key sets of recent executions by (execution id, creation side, its keys, kind, limits): a join
  // whose keys reach several scans (a UNION ALL's branches, both sides of a key equality) has a filter
  // on each, and its creation side is read once for all (a second read of a shuffle is a second job).
  // Bounded, so at most a few key sets outlive their query.
  private val Recent = 8
  private val recent = new java.util.LinkedHashMap[AnyRef, Once](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[AnyRef, Once]): Boolean = size() > Recent
  }

  /** [[collect]], once per execution for the same creation side, keys and limits. */
  def collectOnce(executionId: Option[String], sources: Seq[Source], limits: Limits): Option[KeySet] =
    executionId match {
      case None => collect(sources, limits)
      case Some(id) =>
        val key = (id, sources.map(s =>
          (s.creation.canonicalized, s.keys.map(QueryPlan.normalizeExpressions(_, s.creation.output)), s.broadcast,
            s.picks)),
          limits)
        val once = recent.synchronized { recent.computeIfAbsent(key, _ => new Once(collect(sources, limits))) }
        once.keySet
    }

  /** The filter of the union of the sources' keys, or None when a creation side's keys cannot be read
   * (see [[SieveBroadcastKeys]]), or a job computing them failed ([[ComputedKeys]]: the join meets the error
   * itself if its own computation does, and no filter is better than an error of the filter's own). */
  def collect(sources: Seq[Source], limits: Limits): Option[KeySet] =
    if (!sources.exists(_.computed)) collectKeys(sources, limits)
    else try collectKeys(sources, limits) catch {
      case NonFatal(e) =>
        logWarning(s"spark-sieve: computing a dynamic filter's keys failed, the filter is dropped: $e")
        None
    }

  private def collectKeys(sources: Seq[Source], limits: Limits): Option[KeySet] = {
    reads.incrementAndGet()
    val shape = KeyShape(sources.head.read.map(_.dataType))
    val read = sources.map(s =>
      if (s.broadcast) broadcastKeys(s) else Some(shuffleKeys(s.creation, s.read)))
    val source = if (read.forall(_.isDefined)) Some(union(read.flatten)) else None
    source.map { keys =>
      def bloom(expected: Long) = keys.fold(newBloom(expected, limits))(BloomKeysBuilder.put(_, shape, _))(_ merge _)
      def bitmap(lo: Long, hi: Long) = {
        val toLong = shape.asLong.get
        keys.fold(new LongBitmap(lo, hi))((b, k) => b.add(toLong(k)))(_ merge _)
      }
      def newSummary() = new KeySummary(shape, limits.maxKeys, limits.maxKeyBytes)
      creationRows(sources).filter(_ > limits.maxKeys) match {
        case Some(rows) =>
          // More rows than an IN-set may hold (AQE knows the stage's row count): one pass that also
          // fills a bloom filter sized for those rows, used when the distinct keys overflow the set.
          val (summary, rowsBloom) = keys.fold((newSummary(), newBloom(rows, limits))) { case ((s, b), k) =>
            s.add(k)
            BloomKeysBuilder.put(b, shape, k)
          } { case ((s1, b1), (s2, b2)) => (s1.merge(s2), b1.merge(b2)) }
          choose(shape, summary, limits)(_ => rowsBloom, bitmap)
        case None =>
          choose(shape, keys.fold(newSummary())(_ add _)(_ merge _), limits)(bloom, bitmap)
      }
    }
  }

  /** The count, min and max of broadcast sources' keys (one long-valued key column), in a pass that builds
   * no set: enough for [[KeepEstimate]] to drop a filter that would keep nearly every row before its keys
   * are collected (q68 at sf10 collected customer's 500,000 keys, 151 ms, only to drop them). A relation's
   * keys are distinct (not some columns of them); several sources' counts add up. None when a source is a
   * shuffle, reads some of its keys, or has no keys to read. */
  def broadcastRange(sources: Seq[Source]): Option[KeySummary] = {
    val shape = KeyShape(sources.head.read.map(_.dataType))
    val read = sources.map(s =>
      if (s.broadcast && s.all && shape.asLong.isDefined) broadcastKeys(s) else None)
    if (!read.forall(_.isDefined)) None
    // no room for keys: the summary keeps only their count and range
    else Some(union(read.flatten).fold(new KeySummary(shape, 0, 0))(_ add _)(_ merge _))
  }

  /** The creation side's non-NULL key rows, each pass over them folded into one value. */
  private trait KeySource {
    def fold[T: ClassTag](zero: => T)(add: (T, UnsafeRow) => Unit)(merge: (T, T) => T): T
  }

  /** Every source's keys: each pass folds each source, and merges what they give. */
  private def union(sources: Seq[KeySource]): KeySource =
    if (sources.size == 1) sources.head
    else new KeySource {
      def fold[T: ClassTag](zero: => T)(add: (T, UnsafeRow) => Unit)(merge: (T, T) => T): T =
        sources.map(_.fold(zero)(add)(merge)).reduce(merge)
    }

  /** From the broadcast relation, on the driver where it was built (the columns `picks` of its keys); None when it
   * has no keys to read. */
  private def broadcastKeys(source: Source): Option[KeySource] = {
    def keys() = SieveBroadcastKeys(source.creation, source.keys).map { rows =>
      val rowKeys = rows.map(_.asInstanceOf[UnsafeRow])
      val picked = if (source.all) rowKeys else {
        val project = UnsafeProjection.create(source.picks.map(i => BoundReference(i, source.keys(i).dataType, nullable = true)))
        rowKeys.map(r => project(r))
      }
      picked.filterNot(_.anyNull)
    }
    keys().map(_ => new KeySource {
      def fold[T: ClassTag](zero: => T)(add: (T, UnsafeRow) => Unit)(merge: (T, T) => T): T = {
        val t = zero
        keys().get.foreach(add(t, _))
        t
      }
    })
  }

  /** From the shuffle output, a job per pass: a task per core, each reading several of the shuffle's
   * partitions (tiny tasks cost more than the keys they read, and treeReduce over few partitions needs
   * no extra stage); each task's value merged on executors, so the driver holds only the result. */
  private def shuffleKeys(creation: SparkPlan, creationKeys: Seq[Expression]): KeySource = {
    val bound = BindReferences.bindReferences(creationKeys, creation.output)
    val shuffled = creation.execute()
    val cores = math.max(shuffled.sparkContext.defaultParallelism, 1)
    val input = if (shuffled.getNumPartitions > cores) shuffled.coalesce(cores) else shuffled
    val rows = input.mapPartitions { rows =>
      val project = UnsafeProjection.create(bound)
      rows.map(r => project(r): UnsafeRow).filterNot(_.anyNull)
    }
    new KeySource {
      def fold[T: ClassTag](zero: => T)(add: (T, UnsafeRow) => Unit)(merge: (T, T) => T): T =
        rows.mapPartitions { keys =>
          val t = zero
          keys.foreach(add(t, _))
          Iterator(t)
        }.treeReduce(merge)
    }
  }

  /** The rows of the sources' shuffle stages, when every source is one that has run (AQE) and Spark knows
   * its row count: the key rows a collection would read. */
  def creationRows(sources: Seq[Source]): Option[Long] = {
    val rows = sources.map(s => if (s.broadcast) None else shuffleRows(s.creation))
    if (rows.forall(_.isDefined)) Some(rows.flatten.sum) else None
  }

  /** The row count of a shuffle stage that has run (AQE), when Spark knows it. */
  def shuffleRows(plan: SparkPlan): Option[Long] = plan match {
    case stage: ShuffleQueryStageExec => stage.getRuntimeStatistics.rowCount.map(_.toLong)
    case input: InputAdapter => shuffleRows(input.child) // a child of whole-stage codegen
    case _ => None
  }

  /** Every bloom filter of one key set is created alike (from the same `expected`), so that they merge. */
  private def newBloom(expected: Long, limits: Limits): BlockedBloomFilter =
    BlockedBloomFilter.create(expected, limits.fpp, limits.maxBloomBytes * 8)

  /** The exact set when the keys fit the limits; else, for long keys dense in their range (at most
   * `BitmapBitsPerKey` values of the range per key row, and within `maxBloomBytes`), the bitmap
   * `bitmapOf(lo, hi)` — exact, and cheaper per row than a bloom filter; else the bloom filter
   * `bloomOf(key rows)`. */
  private def choose(shape: KeyShape, s: KeySummary, limits: Limits)(bloomOf: Long => BlockedBloomFilter,
      bitmapOf: (Long, Long) => LongBitmap): KeySet = {
    val range = if (shape.asLong.isDefined) rangeOf(s) else None
    val maxBitmapBits = math.min(BitmapBitsPerKey * s.rows, limits.maxBloomBytes * 8)
    if (s.rows == 0) EmptyKeySet
    else if (!s.overflowed) new InSetKeys(shape, s.longKeys, s.rowKeys, range)
    else range.filter { case (lo, hi) => LongBitmap.fits(lo, hi, maxBitmapBits) } match {
      case Some((lo, hi)) => new BitmapKeys(shape, bitmapOf(lo, hi), s.rows)
      case None => new BloomKeys(shape, bloomOf(s.rows), range, s.rows)
    }
  }

  private def rangeOf(s: KeySummary): Option[(Long, Long)] =
    if (s.rows > 0 && s.min <= s.max) Some((s.min, s.max)) else None

  /** A bitmap is chosen over a bloom filter (~8 bits per key at 3% false positives) up to 32 bits per
   * key row: at most 4x its memory, for an exact test that is ~4x cheaper per row. */
  val BitmapBitsPerKey = 32L
}
