package sieve.membership

import org.apache.spark.sql.catalyst.expressions.{UnsafeRow, XXH64}

/** The 64-bit hashes the per-row key tests use: well mixed in every bit, so that a bit array can be
 * indexed by the top bits and a bloom block by the high half. */
private[sieve] object KeyHash {
  /** MurmurHash3's 64-bit finalizer: a bijection, so distinct keys never share a hash. */
  def ofLong(v: Long): Long = {
    var h = v
    h ^= h >>> 33
    h *= 0xff51afd7ed558ccdL
    h ^= h >>> 33
    h *= 0xc4ceb9fe1a85ec53L
    h ^ (h >>> 33)
  }

  /** The key row's bytes, hashed in place (no copy). */
  def ofRow(key: UnsafeRow): Long = ofBytes(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes)

  def ofBytes(base: AnyRef, offset: Long, length: Int): Long = XXH64.hashUnsafeBytes(base, offset, length, 42L)
}
