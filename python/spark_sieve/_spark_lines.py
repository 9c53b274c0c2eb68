"""The Spark lines spark-sieve supports: one list for the build (dev/), the wheel and CI.

Each line gets its own jar, compiled against the jars of the pyspark release named here (Scala as that
release ships it); the shims that differ between lines are in scala/src/main/spark-3.5 and spark-4.x.
Read without importing the package (dev scripts run it with plain ``python3``), so no imports here.
"""

# (Spark line, the pyspark release the line's jar is built and tested against, Scala binary version)
SPARK_LINES = (
    ("3.5", "3.5.9", "2.12"),
    ("4.0", "4.0.5", "2.13"),
    ("4.1", "4.1.4", "2.13"),
    ("4.2", "4.2.1", "2.13"),
    ("4.3", "4.3.0", "2.13"),
)

NEWEST = SPARK_LINES[-1][0]
OLDEST = SPARK_LINES[0][0]
