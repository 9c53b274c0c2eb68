package sieve.valueset

import sieve.keyset.{EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/**
 * The distinct leaf masks of one value set, each `words` longs, interned: a value's entry holds the id of
 * its mask (the leaves whose sources hold it), so a set of millions of values stores a handful of masks.
 */
final class MaskTable(val words: Int) extends Serializable {
  private var table = new Array[Long](words * 4)
  private var count = 0
  private val index = new java.util.HashMap[MaskTable.Key, Integer]()

  def size: Int = count

  /** The masks, id after id. */
  def flat: Array[Long] = java.util.Arrays.copyOf(table, count * words)

  /** The id of (mask `id`, or no bits when -1) OR the mask `m` of one chunk of values, remembered per id:
   * a set's masks are few and most values share them, so this is an array read, not a new array and a
   * hash lookup. */
  final class OrWith(m: Array[Long]) extends (Int => Int) {
    private var memo = Array.fill(16)(-1)
    private var none = -1 // m alone, for a value not seen before

    def apply(id: Int): Int =
      if (id < 0) { if (none < 0) none = or(id); none }
      else {
        if (id >= memo.length) {
          val grown = Array.fill(math.max(id + 1, memo.length * 2))(-1)
          System.arraycopy(memo, 0, grown, 0, memo.length)
          memo = grown
        }
        if (memo(id) < 0) memo(id) = or(id)
        memo(id)
      }

    private def or(id: Int): Int = {
      if (id >= 0 && covers(id)) return id
      val merged = new Array[Long](words)
      var w = 0
      while (w < words) { merged(w) = m(w) | (if (id >= 0) table(id * words + w) else 0L); w += 1 }
      intern(merged)
    }

    private def covers(id: Int): Boolean = {
      var w = 0
      while (w < words) { if ((m(w) & ~table(id * words + w)) != 0) return false; w += 1 }
      true
    }
  }

  private def intern(m: Array[Long]): Int = {
    val key = new MaskTable.Key(m)
    val known = index.get(key)
    if (known != null) known
    else {
      if ((count + 1) * words > table.length) table = java.util.Arrays.copyOf(table, table.length * 2)
      System.arraycopy(m, 0, table, count * words, words)
      index.put(key, count)
      count += 1
      count - 1
    }
  }
}

object MaskTable {
  private final class Key(val m: Array[Long]) extends Serializable {
    override def hashCode: Int = java.util.Arrays.hashCode(m)
    override def equals(o: Any): Boolean = o match {
      case k: Key => java.util.Arrays.equals(m, k.m)
      case _ => false
    }
  }
}
