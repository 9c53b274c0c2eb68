package sieve.config

import org.apache.spark.sql.catalyst.plans.logical.{Command, LogicalPlan}
import org.apache.spark.sql.internal.SQLConf

/**
 * Analysis check: a query fails with the key's name when a `spark.sieve.*` setting is unknown or
 * malformed, rather than running with a setting the user did not mean. Commands (SET, RESET, ...)
 * are let through so a bad value can always be corrected from SQL. With the master switch off
 * nothing is checked: off means vanilla.
 */
object ValidateSieveConf extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan match {
    case _: Command =>
    case _ if !SieveConf.enabled(SQLConf.get) =>
    case _ => SieveConf.validate(SQLConf.get)
  }
}
