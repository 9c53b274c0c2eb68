package sieve.bulkfilter

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.Duration

import org.apache.spark.SparkContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.util.SerializableConfiguration

import sieve.errors.SieveException
import sieve.valueset._

/**
 * Builds the value sets of a [[SetFilterExec]] in ONE job over all its sources (none for a few MB of text
 * files alone: the driver reads those): each task reads its part of a source (or of its text files,
 * [[TextValueFiles]]) into chunks of values (no hashing where the values are read), the chunks reach the driver
 * (tree aggregate), which makes one set per column from them ([[ValueSetBuilder]]). Values are put in the comparison form of [[ValueComparison.canonical]], so that the
 * set's byte equality is Spark's `=`.
 */
object BuildValueSets {

  /** The sets, and the nanoseconds spent reading the values (the job) and making the sets (driver). */
  def apply(sc: SparkContext, specs: Seq[ValueSetSpec], textFiles: Seq[TextValueFile], sources: Seq[SparkPlan],
      conf: SQLConf): (Array[ValueSet], Long, Long) = {
    val start = System.nanoTime()
    val n = specs.size
    // set c's values (column 0 of its sources) in their comparison form
    val values = specs.map(s => ValueComparison.canonical(BoundReference(0, s.valueType, nullable = true)))
    def newBuilder(c: Int) = new ValueSetBuilder(ValueKey.of(values(c).dataType) == ValueKey.Integral, specs(c).words)
    val timeZone = conf.sessionLocalTimeZone
    val textBytes = textFiles.map(_.length).sum
    val target = math.min(conf.filesMaxPartitionBytes, math.max(DriverReadBytes, textBytes / math.max(sc.defaultParallelism, 1)))
    // small text files and nothing else: read here, without the latency of a job (most of a small query's)
    val onDriver = sources.isEmpty && textBytes <= DriverReadBytes
    val text = if (textFiles.isEmpty || onDriver) Nil else {
      val hadoop = sc.broadcast(new SerializableConfiguration(sc.hadoopConfiguration)) // as Spark's file scans
      val tasks = TextValueFiles.plan(textFiles, target, sc.hadoopConfiguration)
      Seq(sc.parallelize(tasks, tasks.size).map { splits =>
        val builders = new Array[ValueSetBuilder](n)
        TextValueFiles.read(textFiles, splits, hadoop.value.value, timeZone, builders, newBuilder)
        builders.foreach(b => if (b != null) b.trim())
        builders
      })
    }
    val parts: Seq[RDD[Array[ValueSetBuilder]]] = text ++ (for {
      (spec, c) <- specs.zipWithIndex
      branch <- spec.branches
    } yield {
      val value = values(c)
      val add = ValueKey.adder(value.dataType)
      val constant = if (branch.byFile.isEmpty) branch.mask.toArray else null
      val byFile = branch.byFile.map { case (f, m) => UTF8String.fromString(f) -> m.toArray }
      sources(branch.source).execute().mapPartitions { rows =>
        val project = UnsafeProjection.create(Seq(value))
        val set = newBuilder(c)
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
    })
    val merged = if (parts.isEmpty) {
      val builders = new Array[ValueSetBuilder](n)
      if (onDriver) TextValueFiles.read(textFiles, TextValueFiles.plan(textFiles, target, sc.hadoopConfiguration).flatten,
        sc.hadoopConfiguration, timeZone, builders, newBuilder)
      builders
    } else {
      val all = sc.union(parts)
      try all.treeAggregate(new Array[ValueSetBuilder](n))(merge, merge)
      catch { case e: Exception => throw SieveException.causeOf(e).getOrElse(e) }
    }
    val read = System.nanoTime()
    // each column's structure built on its own thread of the driver
    implicit val ec: ExecutionContext = ExecutionContext.global
    val sets = (0 until n).map(c => Future(Option(merged(c)).map(_.result()).getOrElse(new EmptyValueSet(specs(c).words))))
    val built = sets.map(Await.result(_, Duration.Inf)).toArray
    (built, read - start, System.nanoTime() - read)
  }

  /** Text files up to this size in all, with no other source, are read on the driver. */
  val DriverReadBytes: Long = 4L << 20

  private def merge(a: Array[ValueSetBuilder], b: Array[ValueSetBuilder]): Array[ValueSetBuilder] = {
    var i = 0
    while (i < a.length) {
      if (a(i) == null) a(i) = b(i) else if (b(i) != null) a(i).merge(b(i))
      i += 1
    }
    a
  }
}
