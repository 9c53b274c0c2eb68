"""The API on a session without spark-sieve says how to enable it. Each case needs its own JVM
(a process has one SparkContext, whose classpath and extensions are fixed), hence subprocesses: started together
(JVMs start mostly on one core), their outputs shared by the tests."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    import spark_sieve as sieve
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    if sys.argv[1] == "jar-only":
        builder = builder.config("spark.jars", sieve.jar_path())
    spark = builder.getOrCreate()
    try:
        sieve.status(spark)
    except sieve.ExtensionNotEnabledError as e:
        print("ERROR:", e)
    spark.stop()
""")


def test_session_without_the_jar(outputs):
    out = outputs["plain"]
    assert "ERROR: the spark-sieve jar is not on this session's classpath" in out
    assert "spark_sieve.configure(SparkSession.builder)" in out
    assert "spark.sql.extensions=sieve.SieveExtensions" in out


def test_session_with_the_jar_but_not_the_extension(outputs):
    out = outputs["jar-only"]
    assert "ERROR: the spark-sieve jar is loaded but sieve.SieveExtensions is not in this session's" in out


ANOTHER_LINES_JAR = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    import spark_sieve as sieve
    try:
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars", sieve.jar_path(spark_version=sys.argv[1]))
                 .config("spark.sql.extensions", "sieve.SieveExtensions").getOrCreate())
        spark.range(1).collect()
        print("NO ERROR")
    except Exception as e:
        print("ERROR:", e)
""")


def _other_line():
    """(running line, another line, its Scala) for the jar of another line."""
    import pyspark
    from spark_sieve._spark_lines import SPARK_LINES

    running = ".".join(pyspark.__version__.split(".")[:2])
    other, _, other_scala = SPARK_LINES[0] if running != SPARK_LINES[0][0] else SPARK_LINES[-1]
    return running, other, other_scala


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Each case's standard output, its process started beside the others' (output to files: a pipe left unread
    while another process is awaited could fill and stall its writer)."""
    cases = {"plain": (SCRIPT, "plain"), "jar-only": (SCRIPT, "jar-only"),
             "other-line": (ANOTHER_LINES_JAR, _other_line()[1])}
    logs = tmp_path_factory.mktemp("not_enabled")
    procs = {}
    for name, (script, arg) in cases.items():
        with open(logs / f"{name}.out", "w") as out, open(logs / f"{name}.err", "w") as err:
            procs[name] = subprocess.Popen([sys.executable, "-c", script, arg], stdout=out, stderr=err)
    try:
        outs = {}
        for name, proc in procs.items():
            proc.wait(timeout=300)
            assert proc.returncode == 0, f"{name}: {(logs / f'{name}.err').read_text()[-3000:]}"
            outs[name] = (logs / f"{name}.out").read_text()
        return outs
    finally:  # a failure or a timeout must not leave JVMs running
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()


def test_the_jar_of_another_line_and_scala_is_refused_by_name(outputs):
    """By hand (`spark.jars`), a cluster user can load another line's jar: the session fails at once, naming
    both Spark lines and Scala versions and the jar to use, instead of a missing method in some later query
    (or an extension that Spark's log says it skipped)."""
    import pyspark

    running, other, other_scala = _other_line()
    out = outputs["other-line"]
    assert out.startswith("ERROR:"), out
    assert f"spark-sieve: this jar is built for Spark {other} (Scala {other_scala})" in out, out
    assert f"this session runs Spark {pyspark.__version__}" in out
    assert f'Use the jar for Spark {running} (spark_sieve.jar_path("{running}")' in out
