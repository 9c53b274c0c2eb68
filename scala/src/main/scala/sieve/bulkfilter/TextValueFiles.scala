package sieve.bulkfilter

import java.io.InputStream

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.hadoop.io.compress.CompressionCodecFactory
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, EvalMode, GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.types.{ByteType, IntegerType, LongType, ShortType, StringType}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import sieve.errors.SieveSourceException
import sieve.valueset.{ValueKey, ValueSetBuilder}

/** A text value file a [[SetFilter]] reads itself (one value per line): `path` its URI, and
 * the value sets it feeds, each with the mask of the leaves that own the file there. */
final case class TextValueFile(path: String, length: Long, targets: Seq[TextTarget])

/** Value set `set` (of values held as `comparison` says, for key `column`) gets each line with `mask`. */
final case class TextTarget(set: Int, comparison: ValueComparison.Comparison, column: String, mask: Seq[Long])

/**
 * Reads text value files straight into value-set builders, without Spark's text scan: each file is
 * read once for every key column that uses it, each line parsed once per comparison, as the scan path
 * casts it (the session's cast into the compared type, then [[ValueComparison.canonical]]): under ANSI a
 * line that does not parse fails with a [[SieveSourceException]] naming the file, the value and the
 * column, otherwise it matches nothing; a value outside an integral key's range matches nothing.
 * Lines end at `\n`, `\r` or `\r\n`, a UTF-8 byte order mark opening a file is skipped, and a last line
 * with no end counts — as Spark's text source reads them. Large uncompressed files are split; a line
 * belongs to the split its first byte is in.
 */
object TextValueFiles {
  /** Bytes [start, end) of file `file` (a compressed file is one split, end = -1). */
  final case class Split(file: Int, start: Long, end: Long)

  /** The splits of `files`, packed into tasks of about `target` bytes each. */
  def plan(files: Seq[TextValueFile], target: Long, conf: Configuration): Seq[Seq[Split]] = {
    val codecs = new CompressionCodecFactory(conf)
    val splits = files.zipWithIndex.flatMap { case (f, i) =>
      if (codecs.getCodec(hadoopPath(f.path)) != null) Seq(Split(i, 0, -1) -> f.length)
      else (0L until math.max(f.length, 1L) by target).map(s => Split(i, s, math.min(s + target, f.length)) -> (math.min(s + target, f.length) - s))
    }
    // largest first, each into the lightest task so far
    val tasks = math.max(1, ((splits.map(_._2).sum + target - 1) / target).toInt)
    val load = Array.fill(tasks)(0L)
    val packed = Array.fill(tasks)(Seq.newBuilder[Split])
    splits.sortBy(-_._2).foreach { case (s, bytes) =>
      val t = load.indices.minBy(load)
      load(t) += math.max(bytes, 1L)
      packed(t) += s
    }
    packed.map(_.result()).filter(_.nonEmpty).toSeq
  }

  /** Reads `splits` into `builders` (one per value set, made on first use by `newBuilder`). */
  def read(files: Seq[TextValueFile], splits: Seq[Split], conf: Configuration, timeZone: String,
      builders: Array[ValueSetBuilder], newBuilder: Int => ValueSetBuilder): Unit = {
    val codecs = new CompressionCodecFactory(conf)
    // per file, one parse per value type, shared by the sets of that type (and by the file's splits)
    val parsers = scala.collection.mutable.HashMap.empty[Int, Array[TypeTargets]]
    splits.foreach { split =>
      val file = files(split.file)
      val byType = parsers.getOrElseUpdate(split.file, file.targets.groupBy(_.comparison).toArray.map { case (t, targets) =>
        val sets = targets.map(_.set).toArray
        sets.foreach(s => if (builders(s) == null) builders(s) = newBuilder(s))
        new TypeTargets(t, timeZone, file.path, targets.head.column, sets.map(builders), targets.map(_.mask.toArray).toArray)
      })
      val path = hadoopPath(file.path)
      val codec = codecs.getCodec(path)
      val fs = path.getFileSystem(conf)
      val raw = fs.open(path)
      try {
        val in: InputStream = if (codec != null) codec.createInputStream(raw) else { raw.seek(math.max(split.start - 1, 0)); raw }
        val end = if (split.end < 0) Long.MaxValue else split.end
        Lines.foreach(in, split.start, end) { (bytes, offset, length) =>
          var i = 0
          while (i < byType.length) { byType(i).add(bytes, offset, length); i += 1 }
        }
      } finally raw.close()
    }
  }

  /** The sets of one comparison a file feeds (`builders`, each with its `masks`): each line parsed once. */
  private final class TypeTargets(cmp: ValueComparison.Comparison, timeZone: String, file: String, column: String,
      builders: Array[ValueSetBuilder], masks: Array[Array[Long]]) {
    private val (t, held) = (cmp.compared, cmp.held)
    private val line = BoundReference(0, StringType, nullable = false)
    // the line in the compared type: as it is for a string, else cast as the scan path casts it (`try_cast`
    // under ANSI, whose NULL is then an error; the legacy cast, whose NULL matches nothing, otherwise)
    private val cast = if (t == StringType) line
      else Cast(line, t, Some(timeZone), if (cmp.ansi) EvalMode.TRY else EvalMode.LEGACY)
    private val value = ValueComparison.canonical(cast)
    private val parse = UnsafeProjection.create(Seq(value))
    private val adder = ValueKey.adder(held)
    private val row = new GenericInternalRow(1)
    private val integral = held != t // an integral key's values, parsed in a wider integral type
    // plain decimal integers of integral types parse to themselves whatever the cast mode: read directly
    private val (min, max) = t match {
      case ByteType | ShortType | IntegerType | LongType => ValueComparison.integralRange(t)
      case _ => (1L, 0L)
    }
    private val (heldMin, heldMax) = if (integral) ValueComparison.integralRange(held) else (min, max)

    def add(bytes: Array[Byte], offset: Int, length: Int): Unit = {
      if (min <= max && plainInteger(bytes, offset, length)) addLong(integer)
      else if (t == StringType) {
        var i = 0
        while (i < builders.length) { builders(i).addBytes(bytes, Platform.BYTE_ARRAY_OFFSET + offset, length, masks(i)); i += 1 }
      } else {
        row.update(0, UTF8String.fromBytes(bytes, offset, length))
        val parsed = parse(row)
        if (parsed.isNullAt(0)) {
          if (cmp.ansi) throw new SieveSourceException(file, s"value '${row.getUTF8String(0).toString.take(200)}' in " +
            s"${displayPath(file)} cannot be cast to ${t.sql} for column '$column'", prefixed = false)
        } else if (integral) addLong(t match {
          case LongType => parsed.getLong(0)
          case IntegerType => parsed.getInt(0)
          case _ => parsed.getShort(0)
        })
        else {
          var i = 0
          while (i < builders.length) { adder(parsed, builders(i), masks(i)); i += 1 }
        }
      }
    }

    /** An integral value: to each set, unless outside the key's range (no key equals it). */
    private def addLong(v: Long): Unit = if (v >= heldMin && v <= heldMax) {
      var i = 0
      while (i < builders.length) { builders(i).addLong(v, masks(i)); i += 1 }
    }

    private var integer = 0L

    /** Whether the line is `[-]digits` (at most 18) within [min, max], read into `integer` (else it is
     * left to the cast). */
    private def plainInteger(bytes: Array[Byte], offset: Int, length: Int): Boolean = {
      val negative = length > 0 && bytes(offset) == '-'
      val digits = if (negative) length - 1 else length
      if (digits < 1 || digits > 18) return false
      var v = 0L
      var i = offset + length - digits
      while (i < offset + length) {
        val d = bytes(i) - '0'
        if (d < 0 || d > 9) return false
        v = v * 10 + d
        i += 1
      }
      if (negative) v = -v
      integer = v
      v >= min && v <= max
    }
  }

  /** `path` is a URI (`file:/a%20b`), as Spark's `_metadata.file_path` names files. */
  private def hadoopPath(path: String): Path = new Path(new java.net.URI(path))

  /** A local file as its path (`/a b`), any other as its URI. */
  def displayPath(path: String): String = {
    val uri = new java.net.URI(path)
    if (uri.getScheme == null || uri.getScheme == "file") uri.getPath else uri.toString
  }
}

/** What takes each line (a trait, not a Function3, whose Int arguments would be boxed for every line). */
private[bulkfilter] trait LineSink {
  def line(bytes: Array[Byte], offset: Int, length: Int): Unit
}

/** Splits a byte stream into lines at `\n`, `\r` and `\r\n`, as Hadoop's LineReader does. */
private[bulkfilter] object Lines {
  /**
   * Calls `f` with each line (without its end) that starts in [start, end); `in` is positioned at
   * `start - 1` (or 0), so that the byte before `start` says whether a line starts there.
   */
  def foreach(in: InputStream, start: Long, end: Long)(f: LineSink): Unit = {
    val buf = new Array[Byte](1 << 16)
    var carried = new Array[Byte](256) // the start of a line that crosses the buffer's end
    var carriedLen = 0
    var pos = if (start > 0) start - 1 else 0L // the stream position of buf(0)
    var lineStart = pos
    var skip = start > 0 // the line the stream opens in belongs to the split before
    var lastCr = false   // the last byte was a \r: a \n now belongs to the same line end
    var n = in.read(buf)
    var from = 0         // where the current line's bytes begin in buf
    if (start == 0 && n >= 3 && buf(0) == 0xEF.toByte && buf(1) == 0xBB.toByte && buf(2) == 0xBF.toByte) from = 3
    while (n > 0 && lineStart < end) {
      var i = from
      while (i < n && lineStart < end) {
        val b = buf(i)
        if (b == '\n' && lastCr) { lastCr = false; from = i + 1; lineStart = pos + i + 1 }
        else if (b == '\n' || b == '\r') {
          if (!skip) {
            if (carriedLen == 0) f.line(buf, from, i - from)
            else { carried = carry(carried, carriedLen, buf, from, i - from); f.line(carried, 0, carriedLen + i - from) }
          }
          skip = false
          carriedLen = 0
          lastCr = b == '\r'
          from = i + 1
          lineStart = pos + i + 1
        } else lastCr = false
        i += 1
      }
      if (lineStart < end && from < n) {
        if (!skip) carried = carry(carried, carriedLen, buf, from, n - from)
        carriedLen += n - from
      }
      pos += n
      from = 0
      n = in.read(buf)
    }
    if (!skip && carriedLen > 0 && lineStart < end) f.line(carried, 0, carriedLen) // a last line with no end
  }

  /** `carried` (holding `len` bytes) with `count` bytes of `buf` from `from` appended (grown if needed). */
  private def carry(carried: Array[Byte], len: Int, buf: Array[Byte], from: Int, count: Int): Array[Byte] = {
    val out = if (len + count <= carried.length) carried
      else java.util.Arrays.copyOf(carried, math.max(carried.length * 2, len + count))
    System.arraycopy(buf, from, out, len, count)
    out
  }
}
