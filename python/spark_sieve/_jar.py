"""Where the bundled jar is, and what it was built for."""

import glob
import os

from ._version import __version__
from .errors import JarNotFoundError

_JARS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")


def jar_path():
    """The absolute path of the spark-sieve jar bundled inside this package."""
    pattern = os.path.join(_JARS_DIR, f"spark-sieve_*-{__version__}.jar")
    found = sorted(glob.glob(pattern))
    if not found:
        raise JarNotFoundError(
            f"no spark-sieve jar matching {pattern}. The wheel bundles it: install with "
            "`pip install spark-sieve` (or `pip install .` from a checkout, which builds it with sbt); "
            "importing spark_sieve from the source tree does not have it."
        )
    if len(found) > 1:
        raise JarNotFoundError(f"more than one spark-sieve jar in {_JARS_DIR}: {found}")
    return found[0]
