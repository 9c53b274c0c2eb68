"""The demo (the README's first command) runs and says what it did."""

import subprocess
import sys


def test_demo_runs_and_reports():
    out = subprocess.run([sys.executable, "-m", "spark_sieve.demo"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "extension registered: true" in out.stdout
    assert "spark.sieve.enabled = true" in out.stdout
    assert "ConfigError: spark.sieve.enabld: unknown" in out.stdout
