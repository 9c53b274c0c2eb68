package sieve.formats

import scala.util.Try

/** Reads of a table format's private members, where its Spark classes keep what spark-sieve needs (an Iceberg
 * scan's own scan and table, an input partition's tasks); a release where they differ throws, and the caller
 * declines. */
private[formats] object Reflection {
  def hierarchy(c: Class[_]): Iterator[Class[_]] = Iterator.iterate[Class[_]](c)(_.getSuperclass).takeWhile(_ != null)

  /** A private field's value, declared in `o`'s class or above. */
  def field(o: AnyRef, name: String): AnyRef = {
    val f = hierarchy(o.getClass).flatMap(k => Try(k.getDeclaredField(name)).toOption).next()
    f.setAccessible(true)
    f.get(o)
  }

  /** A private method's result (no argument), declared in `o`'s class or above. */
  def call(o: AnyRef, method: String): AnyRef = {
    val m = hierarchy(o.getClass).flatMap(k => Try(k.getDeclaredMethod(method)).toOption).next()
    m.setAccessible(true)
    m.invoke(o)
  }

  /** Why `what` declined on `e`: a release whose classes differ (a member or class missing), or the error. */
  def failure(what: String, e: Throwable): String = e match {
    case _: NoSuchMethodException | _: NoSuchFieldException | _: NoSuchElementException | _: LinkageError |
         _: ClassCastException =>
      s"$what: the format's classes are not those spark-sieve reads (${e.getClass.getSimpleName})"
    case _ => s"$what failed (${e.getClass.getSimpleName}: ${String.valueOf(e.getMessage).take(200)})"
  }
}
