"""The Spark lines spark-sieve supports: one list for the build (dev/), the wheel and CI.

Each line gets its own jar, compiled against the jars of the pyspark release named here (Scala as that
release ships it); the calls that differ between lines are in scala/src/main/shims/spark-3.5 and spark-4.x.
Read without importing the package (dev scripts run it with plain ``python3``), so no imports here.
"""

from __future__ import annotations

# (Spark line, the pyspark release the line's jar is built and tested against, Scala binary version)
SPARK_LINES = (
    ("3.5", "3.5.9", "2.12"),
    ("4.0", "4.0.5", "2.13"),
    ("4.1", "4.1.4", "2.13"),
    ("4.2", "4.2.1", "2.13"),
    ("4.3", "4.3.0", "2.13"),
)

# Spark Connect's server, where pyspark's jars lack it (Spark 3.5 ships it apart, for `--packages
# org.apache.spark:spark-connect_2.12:<version>`): the release the line's Connect plugin compiles against and
# its tests' local Connect server runs (3.5.7: the newest 3.5 one Maven Central serves this project; the
# plugin API is the same in every 3.5.x).
CONNECT_SERVER = {"3.5": "3.5.7"}

# What a line's virtualenv needs beside dev/requirements.txt and pyspark[connect]: pyspark 3.5 wants numpy < 2,
# and pyarrow 20 on needs numpy 2 (its wheels do not say so: pip would take the newest and Connect fail to start)
LINE_REQUIREMENTS = {"3.5": ("pyarrow==19.0.1",)}

# The Delta Lake and Apache Iceberg releases built for a line (Maven coordinates, each jar without its
# dependencies: Spark ships the rest). Test dependencies only, fetched by dev/test into .cache/formats-<line>/:
# the tests of tables in a format run on the lines that have its release and skip, naming the line, elsewhere.
# (Delta 4.1.0 and 4.2.0, built on Spark 4.1.0, fail every ALTER TABLE through their catalog on pyspark 4.1.4:
# NoClassDefFoundError IgnoreCachedData, a trait Spark 4.2 removed and 4.1.2 too, by backport (SPARK-54812); Delta
# 4.3.0 is the first release that loads on 4.1.2 and later. On Spark 4.2.1 it reads and writes tables by path but
# fails every CREATE TABLE in the catalog (NoSuchMethodError CatalogStorageFormat.copy), and on 4.3 it does not load
# (NoSuchMethodError in LogicalRDD's constructor). Iceberg 1.12.0's 4.1 runtime runs every test; Iceberg has no runtime for Spark 4.2 or
# 4.3.)
TABLE_FORMATS: dict[str, dict[str, tuple[str, ...]]] = {
    "3.5": {"delta": ("io.delta:delta-spark_2.12:3.3.2", "io.delta:delta-storage:3.3.2"),
            "iceberg": ("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1",)},
    "4.0": {"delta": ("io.delta:delta-spark_2.13:4.0.1", "io.delta:delta-storage:4.0.1"),
            "iceberg": ("org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.1",)},
    "4.1": {"delta": ("io.delta:delta-spark_2.13:4.3.0", "io.delta:delta-storage:4.3.0"),
            "iceberg": ("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0",)},
}

NEWEST = SPARK_LINES[-1][0]
OLDEST = SPARK_LINES[0][0]

# What CI (.ci/run, `dev/test --ci`) runs on each line. On the newest: every pytest module. On the oldest, the line
# whose Scala, Spark APIs and PySpark differ most: the Scala suites and EVERY_LINE_TESTS (the Scala suites on the
# newest too, or the whole suite on two lines, no longer fit CI's limit: `dev/test --spark LINE` runs everything on
# a line). On every other line EVERY_LINE_TESTS: the bulk-filter semantics (the cars example's nested tree among
# them), dynamic filters (star / semi / outer joins), tables in Delta and Iceberg, the exactness suite's slice
# (tests/exactness.py: Parquet, Delta and Iceberg tables through every evolution and deletion path joined to
# adversarial key sets; `dev/exactness` runs it whole), the session and the package (the two-worker cluster on the
# newest only), each against vanilla's answer with the plan shape. The tests are CPU-bound (two pytest workers on
# two cores took longer than one), so each line's run costs its full time against CI's limit.
EVERY_LINE_TESTS = ("tests/test_bulk_filter.py", "tests/test_dynamic_filter.py", "tests/test_table_formats.py",
                    "tests/test_exactness.py", "tests/test_session.py", "tests/test_package.py")


def ci_scala(line: str) -> bool:
    """Whether CI runs the Scala suites on ``line``."""
    return line == OLDEST


# TPC-DS with its facts in Delta and Iceberg: on the newest line with releases of both (the newest line has
# none yet), beside EVERY_LINE_TESTS.
FORMAT_LINE_TESTS = ("tests/test_tpcds_formats.py",)
FORMAT_LINE = max((line for line in TABLE_FORMATS if len(TABLE_FORMATS[line]) == 2),
                  key=lambda line: tuple(int(p) for p in line.split(".")))


# Spark Connect on the lines whose server is a jar apart (CONNECT_SERVER: 3.5, whose client and server differ
# most from 4.x's), beside EVERY_LINE_TESTS: the plugin, the error mapping, and test_bulk_filter's semantics on
# a Connect DataFrame.
CONNECT_LINE_TESTS = ("tests/test_connect.py", "tests/test_connect_bulk_filter.py")


def ci_tests(line: str) -> tuple[str, ...]:
    """The pytest arguments CI gives on ``line``: empty for every module."""
    if line == NEWEST:
        return ()
    return (EVERY_LINE_TESTS + (FORMAT_LINE_TESTS if line == FORMAT_LINE else ())
            + (CONNECT_LINE_TESTS if line in CONNECT_SERVER else ()))


# Spark's own suites CI runs on each line with spark-sieve loaded (`dev/spark-suites --slice`): on the line's
# test-jars, or, where Maven serves none of the line's release, an older release's, with those of the slice's suites
# that link against the line's jars and pass there without spark-sieve (4.2.0's InjectRuntimeFilterSuite needs
# MergeSubplans, which 4.3's jars do not have).
# The slice: Spark's runtime bloom filter's suite, beside whose filters spark-sieve places its own on every join
# it tests, and the DataFrame joins' (hints, every join type, self-joins), about a minute.
SUITES_SLICE = ("InjectRuntimeFilterSuite", "DataFrameJoinSuite")
SUITES_TESTS_FROM = {"4.3": ("4.2.0", ("DataFrameJoinSuite",))}


def ci_suites(line: str) -> tuple[str, ...]:
    """The arguments of dev/spark-suites CI gives on ``line``."""
    if line in SUITES_TESTS_FROM:
        version, suites = SUITES_TESTS_FROM[line]
        return ("--slice", "--tests-version", version, "--suites", ",".join(suites))
    return ("--slice",)


def tested(line: str) -> str:
    """What CI runs on ``line``, in words."""
    args = ci_tests(line)
    scala = "the Scala suites and " if ci_scala(line) else ""
    suites = SUITES_TESTS_FROM.get(line, (None, SUITES_SLICE))
    return (scala + ("every pytest module" if not args else ", ".join(t.split("/")[-1] for t in args)) +
            f"; Spark's {' and '.join(suites[1])}" + (f" ({suites[0]}'s)" if suites[0] else ""))


def compatibility_table() -> str:
    """README's table of the supported lines (dev/gen-compat-docs writes it; tests check it is current)."""
    def formats(line: str) -> str:
        releases = {name: coordinates[0].rsplit(":", 1)[1] for name, coordinates in TABLE_FORMATS.get(line, {}).items()}
        return " / ".join(releases.get(name, "none") for name in ("delta", "iceberg"))

    rows = ["| Spark line | built and tested with pyspark | Scala | Java | jar | Delta / Iceberg tested | tested in CI |",
            "|---|---|---|---|---|---|---|"]
    rows += [f"| {line} | {pyspark} | {scala} | 17 | `spark-sieve-spark{line}_{scala}-<version>.jar` | {formats(line)} "
             f"| {tested(line)} |" for line, pyspark, scala in SPARK_LINES]
    return "\n".join(rows)


if __name__ == "__main__":
    # dev/env.sh: `python3 _spark_lines.py [LINE]` prints "LINE PYSPARK SCALA" (default: the newest line);
    # `--all` prints every line's, `--ci-tests LINE` the pytest arguments CI gives on it, `--ci-scala LINE`
    # whether CI runs the Scala suites there, `--ci-suites LINE` the arguments of dev/spark-suites CI gives there,
    # `--connect-server LINE`
    # its separate Spark Connect server release (if any), `--requirements LINE` its own pip requirements,
    # `--table-formats LINE` its Delta and Iceberg jars, `--format-line` the newest line with both,
    # `--table` README's table; an unknown line exits non-zero naming the supported ones.
    import sys

    if sys.argv[1:2] == ["--ci-tests"]:  # the pytest arguments CI gives on a line (nothing: every module)
        print(" ".join(ci_tests(sys.argv[2])))
        sys.exit()
    if sys.argv[1:2] == ["--ci-suites"]:  # the arguments of dev/spark-suites CI gives on a line
        print(" ".join(ci_suites(sys.argv[2])))
        sys.exit()
    if sys.argv[1:2] == ["--ci-scala"]:  # "yes" where CI runs the Scala suites on a line
        print("yes" if ci_scala(sys.argv[2]) else "no")
        sys.exit()
    if sys.argv[1:2] == ["--connect-server"]:  # the separate Spark Connect server release of a line, or nothing
        print(CONNECT_SERVER.get(sys.argv[2], ""))
        sys.exit()
    if sys.argv[1:2] == ["--table-formats"]:  # "FORMAT COORDINATE" per jar of the line's Delta / Iceberg releases
        print("\n".join(f"{name} {c}" for name, cs in TABLE_FORMATS.get(sys.argv[2], {}).items() for c in cs))
        sys.exit()
    if sys.argv[1:2] == ["--format-line"]:  # the newest line with releases of both Delta and Iceberg
        print(FORMAT_LINE)
        sys.exit()
    if sys.argv[1:2] == ["--requirements"]:  # a line's own pip requirements, one per line
        print("\n".join(LINE_REQUIREMENTS.get(sys.argv[2], ())))
        sys.exit()
    if sys.argv[1:2] == ["--table"]:
        print(compatibility_table())
        sys.exit()
    wanted = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else NEWEST
    rows = [row for row in SPARK_LINES if wanted in ("--all", row[0])]
    if not rows:
        sys.exit(f"unknown Spark line {wanted!r}: spark-sieve supports {', '.join(r[0] for r in SPARK_LINES)}")
    print("\n".join(" ".join(row) for row in rows))
