package sieve.plan

import java.util.concurrent.{Callable, Executors, ThreadFactory}

/**
 * Reads the driver makes of files that never change under their key (a Parquet footer by path, length and
 * modification time; an Iceberg manifest by path): each kept, the last `size` used, and those not kept read
 * `threads` at a time on daemon threads named `name`, submitted all at once and collected in order.
 */
final class CachedReads[K, V](name: String, threads: Int, size: Int) {
  private val cache = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[K, V](64, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[K, V]): Boolean = this.size() > CachedReads.this.size
    })

  private lazy val pool = Executors.newFixedThreadPool(threads, new ThreadFactory {
    def newThread(r: Runnable): Thread = {
      val t = new Thread(r, name); t.setDaemon(true); t
    }
  })

  /** The value of each item's key, in order: `read(item)` is asked on the caller's thread of each item whose key is
   * not kept (what it needs of the session, e.g. a Hadoop configuration, is made there), and the read it returns
   * runs on the pool. */
  def all[T](items: Seq[T])(key: T => K)(read: T => () => V): Seq[V] = {
    val pending = items.map { item =>
      val k = key(item)
      Option(cache.get(k)) match {
        case Some(kept) => () => kept
        case None =>
          val body = read(item)
          val future = pool.submit(new Callable[V] { def call(): V = body() })
          () => { val v = future.get(); cache.put(k, v); v }
      }
    }
    pending.map(_.apply())
  }
}
