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

NEWEST = SPARK_LINES[-1][0]
OLDEST = SPARK_LINES[0][0]

# What CI (.ci/run, `dev/test --ci`) runs on each line: everything (the Scala suites and every pytest
# module) on the newest. On every other line EVERY_LINE_TESTS: the bulk-filter semantics (the cars
# example's nested tree among them), dynamic filters (star / semi / outer joins), a two-worker cluster, the
# session and the package, each against vanilla's answer with the plan shape. On the oldest also
# OLDEST_LINE_TESTS: the demo, never-change-an-answer, every key type, sessions without the extension, Spark
# Connect (3.5's plugin and error mapping are its own).
# Not the whole suite on the oldest, as issue 14 asks: the newest line's whole run takes ~37 minutes cold on
# CI's two cores (Scala suites 8, the other lines' jars 4, pytest 24: test_tpcds.py and test_sql_corpus.py
# 40% of it), a second would not fit CI's hour. `dev/test --spark 3.5` runs it all on one line.
EVERY_LINE_TESTS = ("tests/test_bulk_filter.py", "tests/test_dynamic_filter.py", "tests/test_cluster.py",
                    "tests/test_session.py", "tests/test_package.py")
OLDEST_LINE_TESTS = EVERY_LINE_TESTS + ("tests/test_demo.py", "tests/test_never_change_an_answer.py",
                                        "tests/test_bulk_filter_types.py", "tests/test_not_enabled.py",
                                        "tests/test_configure.py", "tests/test_connect.py")


def ci_tests(line: str) -> tuple[str, ...] | None:
    """The pytest modules CI runs on ``line``; None: everything, the Scala suites too."""
    if line == NEWEST:
        return None
    return OLDEST_LINE_TESTS if line == OLDEST else EVERY_LINE_TESTS


def tested(line: str) -> str:
    """What CI runs on ``line``, in words."""
    modules = ci_tests(line)
    return "everything" if modules is None else ", ".join(t.split("/")[-1] for t in modules)


def compatibility_table() -> str:
    """README's table of the supported lines (dev/gen-compat-docs writes it; tests check it is current)."""
    rows = ["| Spark line | built and tested with pyspark | Scala | Java | jar | tested in CI |",
            "|---|---|---|---|---|---|"]
    rows += [f"| {line} | {pyspark} | {scala} | 17 | `spark-sieve-spark{line}_{scala}-<version>.jar` | {tested(line)} |"
             for line, pyspark, scala in SPARK_LINES]
    return "\n".join(rows)


if __name__ == "__main__":
    # dev/env.sh: `python3 _spark_lines.py [LINE]` prints "LINE PYSPARK SCALA" (default: the newest line);
    # `--all` prints every line's, `--ci-tests LINE` the pytest modules CI runs on it, `--connect-server LINE`
    # its separate Spark Connect server release (if any), `--requirements LINE` its own pip requirements,
    # `--table` README's table; an unknown line exits non-zero naming the supported ones.
    import sys

    if sys.argv[1:2] == ["--ci-tests"]:  # the modules CI runs on a line, or "everything"
        modules = ci_tests(sys.argv[2])
        print("everything" if modules is None else " ".join(modules))
        sys.exit()
    if sys.argv[1:2] == ["--connect-server"]:  # the separate Spark Connect server release of a line, or nothing
        print(CONNECT_SERVER.get(sys.argv[2], ""))
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
