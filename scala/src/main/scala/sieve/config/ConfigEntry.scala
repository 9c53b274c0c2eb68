package sieve.config

import java.util.Locale

import scala.util.Try

import org.apache.spark.network.util.JavaUtils

import org.apache.spark.sql.internal.SQLConf

import sieve.errors.SieveConfigException

/**
 * One `spark.sieve.*` setting: key, type, default and doc, declared once in [[SieveConf]].
 * Values are read from the session's SQLConf on every use, so `spark.conf.set` takes effect on the
 * next query; a value that does not parse is an error naming the key, never a silent default. An `internal`
 * one (for tests and benches) works the same but is not listed by `SET -v`; docs/tuning.md lists it, not the README.
 */
final case class ConfigEntry[T](
    key: String,
    default: T,
    doc: String,
    typeName: String,
    parse: String => Either[String, T],
    show: T => String = (v: T) => v.toString,
    internal: Boolean = false) {

  def get(conf: SQLConf): T = Option(conf.getConfString(key, null)) match {
    case None => default
    case Some(raw) => parse(raw.trim).fold(msg => throw new SieveConfigException(key, msg), identity)
  }

  def defaultString: String = show(default)

  /** The words a dynamic filter's decline ends with, naming this setting and the value
   * (`value`: "<= 3.2", "= true") that would have placed the filter: `spark_sieve.explain` shows them. */
  def wouldPlace(value: String): String = ConfigEntry.wouldPlace(key, value)

  /** This setting kept out of `SET -v`'s list (Spark's `.internal()`) and listed in docs/tuning.md, not the README. */
  def asInternal: ConfigEntry[T] = copy(internal = true)
}

object ConfigEntry {
  /** [[ConfigEntry.wouldPlace]] of any setting's `key` (Spark's own too). */
  def wouldPlace(key: String, value: String): String = s"; placed with $key $value"

  // a plain decimal number: no whitespace, no 'd' / 'f' suffix, which Java's own parser would take
  private val Decimal = """[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?""".r

  def boolean(key: String, default: Boolean, doc: String): ConfigEntry[Boolean] =
    ConfigEntry(key, default, doc, "boolean", raw => raw.toLowerCase(Locale.ROOT) match {
      case "true" => Right(true)
      case "false" => Right(false)
      case _ => Left(s"'$raw' is not a boolean (true or false)")
    })

  def long(key: String, default: Long, doc: String, min: Long = 0L): ConfigEntry[Long] =
    ConfigEntry(key, default, doc, "long", raw =>
      Try(raw.toLong).toOption match {
        case Some(v) if v >= min => Right(v)
        case Some(v) => Left(s"$v is below the minimum $min")
        case None => Left(s"'$raw' is not a whole number")
      })

  /** A byte size: a number of bytes, or with a unit as Spark's own sizes take them (`64m`, `1g`, `512k`). */
  def bytes(key: String, default: Long, doc: String, min: Long = 0L): ConfigEntry[Long] =
    ConfigEntry(key, default, doc, "bytes", raw =>
      Try(JavaUtils.byteStringAsBytes(raw)).toOption match {
        case Some(v) if v >= min => Right(v)
        case Some(v) => Left(s"$v bytes is below the minimum $min")
        case None => Left(s"'$raw' is not a byte size (a number of bytes, or with a unit: 512k, 64m, 1g)")
      }, showBytes)

  private def showBytes(v: Long): String =
    Seq(30 -> "g", 20 -> "m", 10 -> "k").collectFirst {
      case (shift, unit) if v >= (1L << shift) && v % (1L << shift) == 0 => s"${v >> shift}$unit"
    }.getOrElse(v.toString)

  def double(key: String, default: Double, doc: String, min: Double, max: Double): ConfigEntry[Double] =
    ConfigEntry(key, default, doc, "double", raw =>
      Some(raw).filter(Decimal.pattern.matcher(_).matches()).map(_.toDouble) match {
        case Some(v) if v >= min && v <= max => Right(v)
        case Some(v) => Left(s"$v is outside [$min, $max]")
        case None => Left(s"'$raw' is not a number")
      })

  def oneOf(key: String, default: String, choices: Seq[String], doc: String): ConfigEntry[String] =
    ConfigEntry(key, default, doc, choices.mkString("|"), raw => {
      val v = raw.toLowerCase(Locale.ROOT)
      if (choices.contains(v)) Right(v) else Left(s"'$raw' is not one of ${choices.mkString(", ")}")
    })
}
