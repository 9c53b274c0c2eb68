// spark-sieve: one jar, Spark "provided". Scala and Spark versions match what `pip install pyspark` bundles.
import scala.io.Source

// Spark is compiled against the jars of the pyspark wheel it will run with (SIEVE_PYSPARK_JARS, set by
// dev/sbt): Maven Central as reachable here does not carry Spark 4.3, and pyspark's jars are exactly
// the runtime, so the two can never drift. Nothing of them is packaged ("provided").
val pysparkJars: File = sys.env.get("SIEVE_PYSPARK_JARS").map(file)
  .getOrElse(sys.error("SIEVE_PYSPARK_JARS is not set: run sbt through dev/sbt, which points it at pyspark's jars/"))

val sparkVersion: String = (pysparkJars * "spark-core_*.jar").get.headOption
  .map(_.getName.stripPrefix("spark-core_").stripSuffix(".jar").split("-", 2)(1))
  .getOrElse(sys.error(s"no spark-core jar in $pysparkJars"))

// The Spark line (major.minor): one jar each, with its own target folder. Every Spark-internal call that
// needs a class in Spark's packages, reflection or a per-line form sits in scala/src/main/shims/: `common`
// (the same on every line) and the line's folder (spark-3.5 or spark-4.x: what differs, one object each).
val sparkLine: String = sparkVersion.split("\\.").take(2).mkString(".")
val shimFolder: String = if (sparkLine.startsWith("3.")) "spark-3.5" else "spark-4.x"

// Scala must be the one pyspark ships, or the jar fails to link at run time.
val pysparkScalaVersion: String = (pysparkJars * "scala-library-*.jar").get.headOption
  .map(_.getName.stripPrefix("scala-library-").stripSuffix(".jar"))
  .getOrElse(sys.error(s"no scala-library jar in $pysparkJars"))

// The version lives in python/spark_sieve/_version.py so the jar and the wheel can never disagree.
val sieveVersion = {
  val src = Source.fromFile("python/spark_sieve/_version.py")
  try {
    val Pattern = """__version__\s*=\s*"([^"]+)"""".r
    src.getLines().collectFirst { case Pattern(v) => v }
      .getOrElse(sys.error("no __version__ in python/spark_sieve/_version.py"))
  } finally src.close()
}

// Spark 17+ JVM flags, the same list Spark's launcher passes (JavaModuleOptions).
val jvmModuleOptions = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "--add-modules=jdk.incubator.vector",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true"
)

lazy val root = (project in file("."))
  .settings(
    name := "spark-sieve",
    organization := "io.github.sparksieve",
    version := sieveVersion,
    scalaVersion := pysparkScalaVersion,
    Compile / scalaSource := baseDirectory.value / "scala" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories ++= Seq("common", shimFolder).map(baseDirectory.value / "scala" / "src" / "main" / "shims" / _),
    Test / unmanagedSourceDirectories += baseDirectory.value / "scala" / "src" / "test" / "shims" / shimFolder,
    target := baseDirectory.value / "target" / s"spark-$sparkLine",
    Compile / resourceDirectory := baseDirectory.value / "scala" / "src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "scala" / "src" / "test" / "scala",
    Test / resourceDirectory := baseDirectory.value / "scala" / "src" / "test" / "resources",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Xlint:-unused,_"),
    // the shims' Java classes run wherever the Scala ones do (scalac's bytecode is Java 8's)
    javacOptions ++= Seq("--release", "8"),
    Compile / unmanagedJars ++= (pysparkJars * "*.jar").classpath,
    // Spark Connect's server where pyspark's jars lack it (3.5: SIEVE_CONNECT_SERVER_JAR, set by dev/sbt)
    Compile / unmanagedJars ++= sys.env.get("SIEVE_CONNECT_SERVER_JAR").filter(_.nonEmpty).map(file).toSeq.classpath,
    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      // Iceberg's table API (no Spark in it), which sieve.formats calls only where an Iceberg scan runs: never
      // packaged, the runtime jar a user adds carries it ("provided", as Spark's own optional connectors)
      "org.apache.iceberg" % "iceberg-api" % "1.10.1" % Provided intransitive(),
      "org.apache.iceberg" % "iceberg-core" % "1.10.1" % Provided intransitive(),
      // the Guava Iceberg's classes are built against, relocated: IcebergBindingSuite makes Iceberg schemas
      "org.apache.iceberg" % "iceberg-bundled-guava" % "1.10.1" % Test intransitive()
    ),
    // The jar's own record of what it was built from; PythonFacade.buildInfo reads it.
    Compile / resourceGenerators += Def.task {
      val file = (Compile / resourceManaged).value / "sieve" / "sieve-build.properties"
      IO.write(file,
        s"""version=${version.value}
           |sparkVersion=$sparkVersion
           |sparkLine=$sparkLine
           |scalaVersion=${scalaVersion.value}
           |""".stripMargin)
      Seq(file)
    }.taskValue,
    Compile / packageBin / artifactPath := baseDirectory.value / "target" / "jars" /
      s"spark-sieve-spark${sparkLine}_${scalaBinaryVersion.value}-${version.value}.jar",
    // Spark wants its own JVM flags and one SparkSession per suite; suites run one after another.
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= jvmModuleOptions ++ Seq("-Xmx3g", "-Dspark.ui.enabled=false"),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Test / baseDirectory := (ThisBuild / baseDirectory).value
  )
