package sieve.valueset

import sieve.keyset.{EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/**
 * An id (0 = none) for each offset of [0, length), held as narrow as the largest id needs: bytes, then
 * shorts, then ints, widened in place when a larger id arrives. A value set of dense integers with
 * many masks is one of these: a probe is one load, and a million values of a few hundred masks fit in
 * a megabyte or two (a hash map takes ~30 bytes a value).
 */
final class DenseIds(val length: Int) extends Serializable {
  private var bytes = new Array[Byte](length)
  private var shorts: Array[Short] = _
  private var ints: Array[Int] = _

  def apply(o: Int): Int =
    if (bytes != null) bytes(o) & 0xff else if (shorts != null) shorts(o) & 0xffff else ints(o)

  def update(o: Int, id: Int): Unit = {
    if (bytes != null) {
      if (id <= 0xff) { bytes(o) = id.toByte; return }
      shorts = new Array[Short](length)
      var i = 0
      while (i < length) { shorts(i) = (bytes(i) & 0xff).toShort; i += 1 }
      bytes = null
    }
    if (shorts != null) {
      if (id <= 0xffff) { shorts(o) = id.toShort; return }
      ints = new Array[Int](length)
      var i = 0
      while (i < length) { ints(i) = shorts(i) & 0xffff; i += 1 }
      shorts = null
    }
    ints(o) = id
  }

  def bytesUsed: Long = length.toLong * (if (bytes != null) 1 else if (shorts != null) 2 else 4)
}
