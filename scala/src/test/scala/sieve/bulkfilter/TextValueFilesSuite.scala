package sieve.bulkfilter

import java.io.ByteArrayInputStream
import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

/** Text value files split into lines as Spark's text source does (`\n`, `\r`, `\r\n`; a last line with
 * no end; a byte order mark skipped), and every line read exactly once however the file is split. */
class TextValueFilesSuite extends AnyFunSuite {
  private def reference(text: String): Seq[String] = {
    val body = text.stripPrefix("\uFEFF")
    if (body.isEmpty) Nil else body.split("\r\n|\r|\n", -1).toSeq match {
      case lines if lines.last.isEmpty => lines.init // the end of the last line opens no new line
      case lines => lines
    }
  }

  private def lines(bytes: Array[Byte], cuts: Seq[Int]): Seq[String] = {
    val bounds = (0 +: cuts :+ bytes.length).distinct.sorted
    bounds.zip(bounds.tail).flatMap { case (start, end) =>
      val in = new ByteArrayInputStream(bytes)
      in.skip(math.max(start - 1, 0))
      val out = Seq.newBuilder[String]
      Lines.foreach(in, start, end)((b, o, l) => out += new String(b, o, l, UTF_8))
      out.result()
    }
  }

  test("line ends, blank lines, a last line with no end, a byte order mark; any split points") {
    val rnd = new Random(11)
    val pieces = Seq("a", "bb", "x" * 70000, "", "ü", "\n", "\r", "\r\n", "\n\n", "\r\r\n")
    (0 until 300).foreach { round =>
      val text = (if (round % 7 == 0) "\uFEFF" else "") + Seq.fill(rnd.nextInt(30))(pieces(rnd.nextInt(pieces.size))).mkString
      val bytes = text.getBytes(UTF_8)
      val cuts = Seq.fill(rnd.nextInt(6))(rnd.nextInt(bytes.length + 1))
      assert(lines(bytes, cuts) === reference(text), s"round $round, cuts $cuts: ${text.take(80).replace("\r", "\\r").replace("\n", "\\n")}")
    }
  }

  test("splits are packed into tasks of about the target size, each byte in exactly one split") {
    val files = Seq(TextValueFile("file:/a.txt", 10000, Nil), TextValueFile("file:/b.txt", 10, Nil),
      TextValueFile("file:/c.txt.gz", 5000, Nil), TextValueFile("file:/d.txt", 0, Nil))
    val tasks = TextValueFiles.plan(files, 1000, new org.apache.hadoop.conf.Configuration())
    val splits = tasks.flatten
    assert(splits.filter(_.file == 0).map(s => (s.start, s.end)).sortBy(_._1) === (0L until 10000L by 1000).map(s => (s, s + 1000)))
    assert(splits.filter(_.file == 2) === Seq(TextValueFiles.Split(2, 0, -1))) // compressed: read whole
    assert(splits.count(_.file == 3) === 1 && splits.count(_.file == 1) === 1)
    assert(tasks.size === 13) // 16 of ~1000 bytes planned: the compressed file fills one alone, three stay empty
  }
}
