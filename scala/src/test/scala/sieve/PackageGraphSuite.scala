package sieve

import java.io.File

import scala.io.Source

import org.scalatest.funsuite.AnyFunSuite

/**
 * The packages of `sieve` form an acyclic graph, each importing only the packages written below as its
 * own: membership structures and plan helpers at the bottom, the scan and the cost models above them,
 * the two features above those, the APIs on top, and the root (`SieveExtensions`, the table of contents)
 * importing the features while nothing imports it. A reference counts wherever a source names another
 * package (`import sieve.keyset._`, `sieve.keyset.PassThrough`, a Scaladoc link alike).
 */
class PackageGraphSuite extends AnyFunSuite {
  import PackageGraphSuite._

  test("every package imports only the packages it may") {
    val wrong = for {
      (pkg, uses) <- graph.toSeq
      used <- uses if !Allowed.getOrElse(pkg, Set.empty).contains(used)
    } yield s"$pkg -> $used (${where(pkg, used).mkString(", ")})"
    assert(wrong.isEmpty, s"imports the allowed graph does not hold:\n${wrong.sorted.mkString("\n")}")
  }

  test("the allowed graph is acyclic and names every package there is") {
    assert(graph.keySet.subsetOf(Allowed.keySet), s"packages the graph does not name: ${graph.keySet -- Allowed.keySet}")
    def below(p: String, seen: Set[String]): Unit = Allowed(p).foreach { q =>
      assert(!seen.contains(q), s"a cycle: ${(seen + p).mkString(" -> ")} -> $q")
      below(q, seen + p)
    }
    Allowed.keys.foreach(p => below(p, Set(p)))
  }

  test("the check finds an import the graph does not allow") {
    assert(references("package sieve.keyset\n\nimport sieve.dynamicfilter.KeyCollector\n") === Set("dynamicfilter"))
    assert(references("package sieve.plan\nval x = sieve.SieveExtensions\n") === Set(Root))
    assert(references("package sieve.scan\nimport sieve.{SieveExtensions, X}\n") === Set(Root))
    assert(references("val key = \"spark.sieve.dynamicFilter.enabled\"; val t = \"sieve.keptByDpp\"") === Set.empty)
  }
}

object PackageGraphSuite {
  private val Root = "(root)"

  /** What each package may import: the one place the layering is written. */
  private val Allowed: Map[String, Set[String]] = {
    val base = Map(
      "errors" -> Set.empty[String],
      "exec" -> Set.empty[String],
      "membership" -> Set.empty[String],
      "formats" -> Set("keyset", "plan"),
      "config" -> Set("errors"),
      "plan" -> Set("config"),
      "keyset" -> Set("membership"),
      "valueset" -> Set("keyset", "membership", "errors"),
      "ordering" -> Set("config", "plan", "errors"),
      "scan" -> Set("config", "plan", "keyset", "membership", "errors", "formats"),
      "bulkfilter" -> Set("config", "errors", "exec", "membership", "keyset", "valueset", "ordering", "plan", "scan"),
      "dynamicfilter" -> Set("config", "errors", "exec", "membership", "keyset", "plan", "scan"),
      "api" -> Set("config", "errors", "bulkfilter", "dynamicfilter", "ordering"),
      "connect" -> Set("config", "errors", "bulkfilter", "api"))
    base + (Root -> (base.keySet - "connect"))
  }

  private lazy val root: File = Iterator.iterate(new File(sys.props("user.dir")).getAbsoluteFile)(_.getParentFile)
    .takeWhile(_ != null).find(d => new File(d, "build.sbt").isFile)
    .getOrElse(sys.error(s"no build.sbt above ${sys.props("user.dir")}"))

  /** Every main source (the shims' too) of a `sieve` package, with its package. */
  private lazy val sources: Seq[(String, File)] = {
    val main = new File(root, "scala/src/main")
    def files(d: File): Seq[File] = Option(d.listFiles).toSeq.flatten.flatMap(f => if (f.isDirectory) files(f) else Seq(f))
    files(main).filter(f => f.getName.endsWith(".scala") || f.getName.endsWith(".java")).flatMap { f =>
      PackageLine.findFirstMatchIn(read(f)).map(m => packageName(m.group(1)) -> f)
    }.collect { case (Some(pkg), f) => pkg -> f }
  }

  private lazy val graph: Map[String, Set[String]] =
    sources.groupBy(_._1).map { case (pkg, fs) => pkg -> (fs.flatMap(f => references(read(f._2))).toSet - pkg) }

  private def where(pkg: String, used: String): Seq[String] =
    sources.collect { case (`pkg`, f) if references(read(f)).contains(used) => f.getName }

  private val PackageLine = """(?m)^package\s+([\w.]+)""".r
  private val Reference = """\bsieve\.(\w+|\{)""".r

  /** `sieve` -> the root, `sieve.x...` -> x; anything else (a shim in Spark's packages) -> None. */
  private def packageName(name: String): Option[String] = name.split('.').toList match {
    case "sieve" :: Nil => Some(Root)
    case "sieve" :: p :: _ => Some(p)
    case _ => None
  }

  /** The `sieve` packages a source names outside its package line: `sieve.x.` for a package x, or a class of
   * the root (`sieve.SieveExtensions`). Conf keys (`spark.sieve.…`) and tag names are not packages. */
  private[sieve] def references(text: String): Set[String] = {
    val body = PackageLine.replaceAllIn(text, "")
    Reference.findAllMatchIn(body).filterNot(m => m.start >= 6 && body.substring(m.start - 6, m.start) == "spark.")
      .map(_.group(1)).flatMap { name =>
        if (Allowed.contains(name)) Some(name) else if (name == "{" || name.head.isUpper) Some(Root) else None
      }.toSet
  }

  private def read(f: File): String = {
    val s = Source.fromFile(f, "UTF-8")
    try s.mkString finally s.close()
  }
}
