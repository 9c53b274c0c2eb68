"""The API on a session without spark-sieve says how to enable it. Each case needs its own JVM
(a process has one SparkContext, whose classpath and extensions are fixed), hence subprocesses."""

import subprocess
import sys
import textwrap

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


def _run(case):
    out = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_session_without_the_jar():
    out = _run("plain")
    assert "ERROR: the spark-sieve jar is not on this session's classpath" in out
    assert "spark_sieve.configure(SparkSession.builder)" in out
    assert "spark.sql.extensions=sieve.SieveExtensions" in out


def test_session_with_the_jar_but_not_the_extension():
    out = _run("jar-only")
    assert "ERROR: the spark-sieve jar is loaded but sieve.SieveExtensions is not in this session's" in out
