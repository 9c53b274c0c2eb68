"""What the running Spark line can do, for tests of features that exist on some lines only. A test of such
a feature is marked with the mark here: it is reported as skipped on the older line, with the reason —
never dropped silently, never run into an error that is the older Spark's, not spark-sieve's."""

import pyspark
import pytest

LINE = tuple(int(p) for p in pyspark.__version__.split(".")[:2])

# collations (STRING COLLATE ..., collate()) arrived in Spark 4.0
COLLATIONS = LINE >= (4, 0)
NEEDS_COLLATIONS = pytest.mark.skipif(not COLLATIONS, reason=f"Spark {pyspark.__version__} has no collations")

# Spark 3.5 ships Spark Connect's server apart from pyspark's jars (a jar of its own; 4.0 on, inside)
CONNECT_SERVER_APART = LINE < (4, 0)
