"""The settings that force dynamic filters onto every join the rule allows, on the tests' tiny tables:
one home for the modules whose answers check every filter (TPC-DS, TPC-H, Spark's SQL golden files).

- ``waitWeight=0``: the wait for a filter's keys never declines it. On these tiny tables a scan reads less than
  a stage's start (``stageStartBytes``); without it few queries would get a filter and "sieve equals vanilla"
  would say little about them.
- ``sameStageRowTest=true``: every row tested, also below broadcast joins that probe it in its stage (by
  default such a filter is only pushed into the scan, and not placed at all where the scan's footers show
  its key spread over every row group, as in most small files): the answers then check every key set's test.
"""

FORCED = {
    "spark.sieve.dynamicFilter.waitWeight": "0",
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
