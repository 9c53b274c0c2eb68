"""The settings that force dynamic filters onto every join the rule allows, on the tests' tiny tables:
one home for the modules whose answers check every filter (TPC-DS, TPC-H, Spark's SQL golden files).

- ``minApplicationBytes=0``: these tables are far below the 64 MB a filter's scan must read by default;
  without it no query would get a filter and "sieve equals vanilla" would say nothing about them.
- ``sameStageRowTest=true``: every row tested, also below broadcast joins that probe it in its stage (by
  default such a filter is only pushed into the scan, and not placed at all where the scan's footers show
  its key spread over every row group, as in most small files): the answers then check every key set's test.
"""

FORCED = {
    "spark.sieve.dynamicFilter.minApplicationBytes": "0",
    "spark.sieve.dynamicFilter.sameStageRowTest": "true",
}


def force(spark):
    """Sets FORCED on ``spark``'s session."""
    for key, value in FORCED.items():
        spark.conf.set(key, value)


def unforce(spark):
    """Back to the defaults."""
    for key in FORCED:
        spark.conf.unset(key)
