"""Where the bundled jars are (one per supported Spark line), and which one a Spark runs with."""

from __future__ import annotations

import glob
import os

from ._spark_lines import SPARK_LINES
from ._version import __version__
from ._versions import parse_version
from .errors import JarNotFoundError, SparkVersionError

_JARS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")


def spark_line(spark_version: str) -> str:
    """'4.3.0' / '4.3' -> '4.3', the line a jar is built for; SparkVersionError outside SPARK_LINES."""
    try:
        line: str | None = ".".join(str(p) for p in parse_version(spark_version)[:2])
    except ValueError:
        line = None
    supported = [ln for ln, _, _ in SPARK_LINES]
    if line is None or line not in supported:
        raise SparkVersionError(
            f"spark-sieve {__version__} supports Spark {', '.join(supported)}; not Spark {spark_version}")
    return line


def jar_path(spark_version: str | None = None) -> str:
    """The absolute path of the bundled spark-sieve jar for ``spark_version`` ('3.5', '4.3.0', ...;
    default: the installed pyspark's) — the jar a cluster user passes with ``--jars``."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    line = spark_line(spark_version)
    pattern = os.path.join(_JARS_DIR, f"spark-sieve-spark{line}_*-{__version__}.jar")
    found = sorted(glob.glob(pattern))
    if not found:
        bundled = sorted(os.path.basename(j) for j in glob.glob(os.path.join(_JARS_DIR, "spark-sieve-*.jar")))
        raise JarNotFoundError(
            f"no spark-sieve jar for Spark {line} ({pattern}); this package bundles {bundled or 'none'}. "
            "Install the wheel with `pip install spark-sieve` (or `pip install .` from a checkout, which "
            "builds the jars with sbt); importing spark_sieve from the source tree does not have them."
        )
    if len(found) > 1:
        raise JarNotFoundError(f"more than one spark-sieve jar for Spark {line} in {_JARS_DIR}: {found}")
    return found[0]
