package sieve.keyset

/**
 * The distinct leaf masks of one value set, each `words` longs, interned: a value's entry holds the id of
 * its mask (the leaves whose sources hold it), so a set of millions of values stores a handful of masks.
 */
final class MaskTable(val words: Int) extends Serializable {
  private var table = new Array[Long](words * 4)
  private var count = 0
  private val index = new java.util.HashMap[MaskTable.Key, Integer]()
  // the mask last interned from outside, by identity: a source adds all its values with one mask array
  @transient private var lastArray: Array[Long] = _
  @transient private var lastId = -1

  def size: Int = count

  /** The masks, id after id. */
  def flat: Array[Long] = java.util.Arrays.copyOf(table, count * words)

  /** The id of (mask `id`, or no bits when -1) OR the `words` longs of `m` from `from`. */
  def or(id: Int, m: Array[Long], from: Int): Int = {
    if (id < 0 && from == 0 && (m eq lastArray)) return lastId
    if (id >= 0 && covers(id, m, from)) return id
    val merged = new Array[Long](words)
    var w = 0
    while (w < words) { merged(w) = m(from + w) | (if (id >= 0) table(id * words + w) else 0L); w += 1 }
    val found = intern(merged)
    if (id < 0 && from == 0) { lastArray = m; lastId = found }
    found
  }

  /** `or` of the chunk masks `m` (from 0) for many ids, remembered per id: a set's masks are few, and
   * most values share them, so this is an array read instead of a new array and a hash lookup. */
  final class OrWith(m: Array[Long]) {
    private var memo = Array.fill(16)(-1)
    def apply(id: Int): Int =
      if (id < 0) or(id, m, 0)
      else {
        if (id >= memo.length) {
          val grown = Array.fill(math.max(id + 1, memo.length * 2))(-1)
          System.arraycopy(memo, 0, grown, 0, memo.length)
          memo = grown
        }
        if (memo(id) < 0) memo(id) = or(id, m, 0)
        memo(id)
      }
  }

  /** The `words` longs of mask `id` as (array, offset). */
  def get(id: Int): (Array[Long], Int) = (table, id * words)

  private def covers(id: Int, m: Array[Long], from: Int): Boolean = {
    var w = 0
    while (w < words) { if ((m(from + w) & ~table(id * words + w)) != 0) return false; w += 1 }
    true
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
