package sieve.valueset

import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods

import sieve.keyset.{EmptyKeySet, InSetKeys, KeySet}
import sieve.membership._

/**
 * An open-addressing map from byte strings (a string's UTF-8 bytes, a binary value, a key's UnsafeRow)
 * to a non-negative int; `get` answers -1 when absent. Every key's bytes live in one growing array, so a
 * set of millions of strings is a handful of objects to hold and to broadcast.
 */
final class BytesIdMap(expected: Int = 32) extends Serializable {
  private var mask = LongIdMap.slotsFor(expected) - 1
  private var slots = Array.fill(mask + 1)(-1) // entry index, -1: empty
  private var hashes = new Array[Long](mask + 1)
  // entries, in insertion order
  private var offsets = new Array[Int](16)
  private var lengths = new Array[Int](16)
  private var ids = new Array[Int](16)
  private var data = new Array[Byte](256)
  private var used = 0
  private var count = 0

  def size: Int = count
  def bytes: Long = slots.length * 12L + offsets.length * 12L + data.length

  def get(base: AnyRef, offset: Long, length: Int): Int = {
    val h = KeyHash.ofBytes(base, offset, length)
    val e = find(h, base, offset, length)
    if (e < 0) -1 else ids(e)
  }

  /** Sets the id of the key to `f(its id, or -1 when absent)`. */
  def update(base: AnyRef, offset: Long, length: Int, f: Int => Int): Unit = {
    val h = KeyHash.ofBytes(base, offset, length)
    val e = find(h, base, offset, length)
    if (e >= 0) ids(e) = f(ids(e))
    else {
      if (count == ids.length) {
        offsets = java.util.Arrays.copyOf(offsets, count * 2)
        lengths = java.util.Arrays.copyOf(lengths, count * 2)
        ids = java.util.Arrays.copyOf(ids, count * 2)
      }
      if (used.toLong + length > data.length) {
        val grown = math.max(data.length.toLong * 2, used.toLong + length)
        require(grown <= Int.MaxValue - 16, "a value set of more than 2 GB of bytes")
        data = java.util.Arrays.copyOf(data, grown.toInt)
      }
      Platform.copyMemory(base, offset, data, Platform.BYTE_ARRAY_OFFSET + used, length)
      offsets(count) = used
      lengths(count) = length
      ids(count) = f(-1)
      used += length
      insert(count, h)
      count += 1
      if (count * 2 > mask) grow()
    }
  }

  /** Calls `f(base, offset, length, id)` for each key. */
  def foreach(f: (AnyRef, Long, Int, Int) => Unit): Unit = {
    var e = 0
    while (e < count) { f(data, Platform.BYTE_ARRAY_OFFSET + offsets(e), lengths(e), ids(e)); e += 1 }
  }

  private def find(h: Long, base: AnyRef, offset: Long, length: Int): Int = {
    var i = (h >>> 32).toInt & mask
    while (slots(i) >= 0) {
      val e = slots(i)
      if (hashes(i) == h && lengths(e) == length && ByteArrayMethods.arrayEquals(
          data, Platform.BYTE_ARRAY_OFFSET + offsets(e), base, offset, length)) return e
      i = (i + 1) & mask
    }
    -1
  }

  private def insert(e: Int, h: Long): Unit = {
    var i = (h >>> 32).toInt & mask
    while (slots(i) >= 0) i = (i + 1) & mask
    slots(i) = e
    hashes(i) = h
  }

  private def grow(): Unit = {
    val (oldSlots, oldHashes) = (slots, hashes)
    mask = mask * 2 + 1
    slots = Array.fill(mask + 1)(-1)
    hashes = new Array[Long](mask + 1)
    var i = 0
    while (i < oldSlots.length) { if (oldSlots(i) >= 0) insert(oldSlots(i), oldHashes(i)); i += 1 }
  }
}
