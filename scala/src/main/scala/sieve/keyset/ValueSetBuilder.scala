package sieve.keyset

/**
 * Builds a [[ValueSet]]: one builder per task over that task's values, builders merged (on executors,
 * then the driver), `result` choosing the structure. Adding a value again ORs its masks.
 */
final class ValueSetBuilder(val integral: Boolean, val words: Int) extends Serializable {
  private val longs = if (integral) new LongIdMap() else null
  private val byteKeys = if (integral) null else new BytesIdMap()
  private val masks = new MaskTable(words)
  private var lo = Long.MaxValue
  private var hi = Long.MinValue

  def size: Int = if (integral) longs.size else byteKeys.size

  def addLong(v: Long, mask: Array[Long]): Unit = {
    addLong(v, mask, 0)
    if (v < lo) lo = v
    if (v > hi) hi = v
  }

  def addBytes(base: AnyRef, offset: Long, length: Int, mask: Array[Long]): Unit = addBytes(base, offset, length, mask, 0)

  private def addLong(v: Long, m: Array[Long], from: Int): Unit = longs.update(v, id => masks.or(id, m, from))

  private def addBytes(base: AnyRef, offset: Long, length: Int, m: Array[Long], from: Int): Unit =
    byteKeys.update(base, offset, length, id => masks.or(id, m, from))

  def merge(other: ValueSetBuilder): ValueSetBuilder = {
    require(other.integral == integral && other.words == words, "value sets of different shapes")
    if (integral) {
      other.longs.foreach { (v, id) => val (m, at) = other.masks.get(id); addLong(v, m, at) }
      lo = math.min(lo, other.lo)
      hi = math.max(hi, other.hi)
    } else {
      other.byteKeys.foreach { (base, offset, length, id) => val (m, at) = other.masks.get(id); addBytes(base, offset, length, m, at) }
    }
    this
  }

  /** The set: a bitmap for dense long values all of one mask (at most `BitmapBitsPerValue` bits per
   * value, where it is smaller than the hash set and needs no hash), else a hash set. */
  def result(): ValueSet = {
    val table = masks.flat
    if (size == 0) new EmptyValueSet(words)
    else if (!integral) {
      val fp = new Fingerprint(size)
      byteKeys.foreach((base, offset, length, _) => fp.add(KeyHash.ofBytes(base, offset, length)))
      new BytesValueSet(byteKeys, fp, words, table)
    } else if (masks.size == 1 && LongBitmap.fits(lo, hi, ValueSetBuilder.BitmapBitsPerValue * size)) {
      val bitmap = new LongBitmap(lo, hi)
      longs.foreach((v, _) => bitmap.add(v))
      new BitmapValueSet(bitmap, size, words, table)
    } else {
      val fp = new Fingerprint(size)
      longs.foreach((v, _) => fp.add(KeyHash.ofLong(v)))
      new LongValueSet(longs, fp, words, table)
    }
  }
}

object ValueSetBuilder {
  /** A hash set costs ~24 bytes (192 bits) per value at its load factor: a bitmap of up to 64 bits per
   * value is smaller and cheaper to probe. */
  val BitmapBitsPerValue = 64L
}
