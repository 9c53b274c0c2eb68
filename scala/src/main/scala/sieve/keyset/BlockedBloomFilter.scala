package sieve.keyset

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

import sieve.membership._

/**
 * A split-block bloom filter (as Parquet's and Impala's): each key sets one bit in each of the 8
 * 32-bit words of one 256-bit block, so a test reads one half cache line, with no data-dependent
 * branch — against a classic bloom filter's k scattered reads (measured, 30M probes: 10-13 ns here,
 * 36-38 ns for Spark's). Every filter of one key set is created with the same size, so they merge.
 */
final class BlockedBloomFilter private (private val words: Array[Int]) extends Serializable {
  import BlockedBloomFilter._

  private val blocks = words.length / 8

  def bitSize: Long = words.length * 32L

  def putLong(v: Long): Unit = put(KeyHash.ofLong(v))
  def mightContainLong(v: Long): Boolean = test(KeyHash.ofLong(v))
  def putRow(key: UnsafeRow): Unit = put(KeyHash.ofRow(key))
  def mightContainRow(key: UnsafeRow): Boolean = test(KeyHash.ofRow(key))

  /** Adds `other`'s keys (an OR of the bits); both must have been created alike. */
  def merge(other: BlockedBloomFilter): BlockedBloomFilter = {
    require(other.words.length == words.length, s"bloom filters of ${bitSize} and ${other.bitSize} bits")
    var i = 0
    while (i < words.length) { words(i) |= other.words(i); i += 1 }
    this
  }

  private def blockStart(h: Long): Int = (((h >>> 32) * blocks) >>> 32).toInt * 8

  private def put(h: Long): Unit = {
    val base = blockStart(h)
    val k = h.toInt
    words(base) |= bit(k * S0); words(base + 1) |= bit(k * S1); words(base + 2) |= bit(k * S2)
    words(base + 3) |= bit(k * S3); words(base + 4) |= bit(k * S4); words(base + 5) |= bit(k * S5)
    words(base + 6) |= bit(k * S6); words(base + 7) |= bit(k * S7)
  }

  // unrolled, without a branch per word (and no tuples: they box): every bit is looked at, in one
  // half cache line
  private def test(h: Long): Boolean = {
    val w = words
    val base = blockStart(h)
    val k = h.toInt
    ((~w(base) & bit(k * S0)) | (~w(base + 1) & bit(k * S1)) | (~w(base + 2) & bit(k * S2)) |
      (~w(base + 3) & bit(k * S3)) | (~w(base + 4) & bit(k * S4)) | (~w(base + 5) & bit(k * S5)) |
      (~w(base + 6) & bit(k * S6)) | (~w(base + 7) & bit(k * S7))) == 0
  }
}

object BlockedBloomFilter {
  // Parquet's split-block salts: odd constants spreading one 32-bit key over 8 bit positions
  private final val S0 = 0x47b6137b
  private final val S1 = 0x44974d91
  private final val S2 = 0x8824ad5b
  private final val S3 = 0xa2b7289d
  private final val S4 = 0x705495c7
  private final val S5 = 0x2df1424b
  private final val S6 = 0x9efc4947
  private final val S7 = 0x5c6bfb31

  /** The bit of a 32-bit word that the top 5 bits of a salted key name. */
  @inline private def bit(salted: Int): Int = 1 << (salted >>> 27)

  /** Sized for `expectedKeys` at false-positive rate `fpp`, at most `maxBits`. */
  def create(expectedKeys: Long, fpp: Double, maxBits: Long): BlockedBloomFilter =
    new BlockedBloomFilter(new Array[Int](blocks(expectedKeys, fpp, maxBits) * 8))

  /** Parquet's sizing: m = -8n / ln(1 - p^(1/8)) bits, in whole 256-bit blocks. */
  def blocks(expectedKeys: Long, fpp: Double, maxBits: Long): Int = {
    val bits = -8.0 * math.max(expectedKeys, 1L) / math.log(1 - math.pow(fpp, 1.0 / 8))
    val most = math.min(maxBits / 256, Int.MaxValue / 8)
    math.ceil(bits / 256).toLong.min(most).max(1L).toInt
  }
}
