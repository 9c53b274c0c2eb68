"""The setting that places dynamic filters on every join the rule allows, on the tests' tiny tables: one home
for the modules whose answers check every filter (TPC-DS, TPC-H, Spark's SQL golden files).

``spark.sieve.testing.placeEveryFilter`` (internal, as dev/spark-suites runs Spark's own suites): every benefit
check and threshold off — on these tables a scan reads less than a stage's start, and without it few queries would
get a filter, so "sieve equals vanilla" would say little about them — keys pushed into every scan that takes them,
every row tested (also below broadcast joins that probe it in its stage), no task passing its rows through, and the
movable predicates of bulk filters and subquery filters moved. The preconditions that keep answers stay on.
"""

FORCED = {
    "spark.sieve.testing.placeEveryFilter": "true",
}


def force(spark):
    """Sets FORCED on ``spark``'s session."""
    for key, value in FORCED.items():
        spark.conf.set(key, value)


def unforce(spark):
    """Back to the defaults."""
    for key in FORCED:
        spark.conf.unset(key)
