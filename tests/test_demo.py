"""The demo (the README's first command) runs and says what it did."""

import re
import subprocess
import sys


def test_demo_runs_and_reports():
    out = subprocess.run([sys.executable, "-m", "spark_sieve.demo"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "extension registered: true" in out.stdout
    assert "spark.sieve.enabled = true" in out.stdout
    assert "ConfigError: spark.sieve.enabld: unknown" in out.stdout
    # the seed's cars example: the order chosen, then both timings and their ratio
    assert "as run:" in out.stdout and "include(color" in out.stdout and "include(region" in out.stdout
    assert "spark-sieve " in out.stdout and "plain Spark (EXISTS)" in out.stdout and "ratio:" in out.stdout
    # the star join: both plans side by side, the dynamic filter explained, the same answer, the ratio
    assert "vanilla Spark" in out.stdout and "| spark-sieve" in out.stdout
    assert "DynamicFilter [k#" in out.stdout and "in-set of" in out.stdout
    assert out.stdout.count("ratio: spark-sieve is") == 2
    # the same tree from a Spark Connect client (on Spark 3.5 with the Connect server dev/test fetched)
    assert re.search(r"pyspark.sql.connect.dataframe.DataFrame: [\d,]+ of 200,000 cars kept; server's spark-sieve "
                     r"registered: true", out.stdout), out.stdout[-2000:]
    # no console progress bars running through the results
    assert "[Stage " not in out.stdout and "[Stage " not in out.stderr
    # nothing set where it cannot be (the Connect client is given no setting of its server's)
    assert "UserWarning" not in out.stderr and "CANNOT_MODIFY_CONFIG" not in out.stderr, out.stderr[-3000:]
