package sieve.bulkfilter

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.Duration

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.unsafe.types.UTF8String

import sieve.keyset._

/**
 * Builds the value sets of a [[SetFilterExec]] in ONE job over all its sources: each task reads its part
 * of a source into chunks of values (no hashing where the values are read), the chunks reach the driver
 * (tree aggregate), which makes one set per column from them ([[ValueSetBuilder]]). Values are put in the comparison form of [[ValueComparison.canonical]], so that the
 * set's byte equality is Spark's `=`.
 */
object BuildValueSets {

  /** The sets, and the nanoseconds spent reading the values (the job) and making the sets (driver). */
  def apply(specs: Seq[ValueSetSpec], sources: Seq[SparkPlan]): (Array[ValueSet], Long, Long) = {
    val start = System.nanoTime()
    val n = specs.size
    val parts: Seq[RDD[Array[ValueSetBuilder]]] = for {
      (spec, c) <- specs.zipWithIndex
      branch <- spec.branches
    } yield {
      val value = ValueComparison.canonical(BoundReference(0, spec.valueType, nullable = true))
      val (integral, add, words) = (ValueKey.of(value.dataType) == ValueKey.Integral, ValueKey.adder(value.dataType), spec.words)
      val constant = if (branch.byFile.isEmpty) branch.mask.toArray else null
      val byFile = branch.byFile.map { case (f, m) => UTF8String.fromString(f) -> m.toArray }
      sources(branch.source).execute().mapPartitions { rows =>
        val project = UnsafeProjection.create(Seq(value))
        val set = new ValueSetBuilder(integral, words)
        var (lastFile, lastMask) = (null: UTF8String, null: Array[Long])
        rows.foreach { row =>
          val mask = if (constant != null) constant else {
            val file = row.getUTF8String(1)
            if (file != lastFile) { lastFile = file.clone(); lastMask = byFile.getOrElse(lastFile, null) }
            lastMask
          }
          val v = project(row)
          if (mask != null && !v.isNullAt(0)) add(v, set, mask)
        }
        set.trim()
        Iterator(Array.tabulate(n)(i => if (i == c) set else null))
      }
    }
    val merged = if (parts.isEmpty) new Array[ValueSetBuilder](n) else {
      val all = parts.head.sparkContext.union(parts)
      all.treeAggregate(new Array[ValueSetBuilder](n))(merge, merge)
    }
    val read = System.nanoTime()
    // each column's structure built on its own thread of the driver
    implicit val ec: ExecutionContext = ExecutionContext.global
    val sets = (0 until n).map(c => Future(Option(merged(c)).map(_.result()).getOrElse(new EmptyValueSet(specs(c).words))))
    val built = sets.map(Await.result(_, Duration.Inf)).toArray
    (built, read - start, System.nanoTime() - read)
  }

  private def merge(a: Array[ValueSetBuilder], b: Array[ValueSetBuilder]): Array[ValueSetBuilder] = {
    var i = 0
    while (i < a.length) {
      if (a(i) == null) a(i) = b(i) else if (b(i) != null) a(i).merge(b(i))
      i += 1
    }
    a
  }
}
