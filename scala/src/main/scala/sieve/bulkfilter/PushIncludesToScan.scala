package sieve.bulkfilter

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf

import sieve.valueset.ValueSet
import sieve.ordering._
import sieve.scan.{KeyPrunedFileIndex, KeyScanPushdown}

/**
 * The include leaves every kept row must match — the tree's root, or a leaf of a root AND — pushed into
 * the file scan below a [[SetFilterExec]] once its sets are built, as the dynamic filter pushes its keys
 * ([[KeyScanPushdown]]: an IN for small sets, key ranges cut at the widest gaps, Parquet footer
 * pruning), so that row groups holding none of their values are never read. Only a leaf whose key is a
 * plain column compared as it is (no cast, no normalisation) qualifies; an exclude leaf pushes nothing.
 * The settings are the dynamic filter's scan-pushdown ones.
 */
object PushIncludesToScan {

  final case class Result(plan: SparkPlan, predicates: Seq[Expression], pruning: Seq[KeyPrunedFileIndex.Counts])

  def apply(condition: TreeCondition, sets: Seq[ValueSet], child: SparkPlan, conf: SQLConf,
      publish: KeyPrunedFileIndex.Counts => Unit): Result = {
    val limits = KeyScanPushdown.Limits.from(conf)
    val required = condition.tree match {
      case Leaf(l) => Seq(l)
      case AllOf(cs) => cs.collect { case Leaf(l) => l }
      case _ => Nil
    }
    required.foldLeft(Result(child, Nil, Nil)) { (done, leaf) =>
      condition.tests(leaf) match {
        case SetBit(c, bit) if condition.includes(leaf) => condition.keyOf(c) match {
          case key: Attribute =>
            sets(c).keysWithBit(bit, key.dataType, limits.inSize) match {
              case Some(keys) =>
                val (plan, pushed) = KeyScanPushdown(done.plan, key, keys, limits, conf, publish)
                Result(plan, done.predicates ++ pushed.predicates, done.pruning ++ pushed.pruning)
              case None => done
            }
          case _ => done
        }
        case _ => done
      }
    }
  }
}
