"""The two tiers of the Python tests. `dev/test` runs the quick one: every feature, each answer against vanilla
Spark's with the plan shape, under Spark's default AQE. `dev/test --full` (and CI) runs every module, the corpora and
long end-to-end runs too, and each test's AQE-off variant. One home for which test is in which; a module named on the
command line always runs whole. (The Scala suites read the same SIEVE_TESTS: SieveSessionSuite.testWithAndWithoutAqe.)
"""

import os

FULL = os.environ.get("SIEVE_TESTS") == "full"

# Modules only the full tier runs (~70% of a whole pytest run on Spark 4.3; docs/development.md has the figures):
# the corpora: TPC-DS's 99 queries in layouts, AQE on and off, and on a cluster; Spark's SQL golden files; every pair
# of bulk-filter value and column types; TPC-H's 22 queries; TPC-DS on Delta and Iceberg. And the end-to-end runs of
# features the quick tier tests in-process: the README's demo command, dynamic filters on a standalone cluster's
# executors (two worker JVMs to start), test_bulk_filter's every test again on Spark Connect (test_connect, quick,
# runs each API of both features there).
FULL_ONLY = ("test_tpcds.py", "test_sql_corpus.py", "test_bulk_filter_type_pairs.py", "test_tpch.py",
             "test_tpcds_formats.py", "test_demo.py", "test_cluster.py", "test_connect_bulk_filter.py")


def quick(config) -> bool:
    """Whether a pytest run is the quick tier: not SIEVE_TESTS=full, and no module named on its command line."""
    return not FULL and not config.getoption("file_or_dir")


def aqe_off(item) -> bool:
    """Whether a collected test is the AQE-off variant of a test parametrized by AQE (`aqe` "false", `aqe_on`
    False): the quick tier leaves it to the full one."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return params.get("aqe") == "false" or params.get("aqe_on") is False
