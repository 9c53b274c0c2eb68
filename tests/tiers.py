"""The two tiers of the Python tests. `dev/test` runs the quick one: every feature, each answer against vanilla
Spark's with the plan shape. `dev/test --full` (and CI on the newest line) runs every module, the corpora and
long end-to-end runs too. One home for which module is in which; a module named on the command line always runs.
"""

import os

FULL = os.environ.get("SIEVE_TESTS") == "full"

# Modules only the full tier runs: the corpora, 60% of a whole run's time on Spark 4.3 (docs/development.md has the
# table): TPC-DS's 99 queries in layouts, AQE on and off, and on a cluster; Spark's SQL golden files; every pair of
# bulk-filter value and column types; TPC-H's 22 queries; TPC-DS on Delta and Iceberg.
FULL_ONLY = ("test_tpcds.py", "test_sql_corpus.py", "test_bulk_filter_type_pairs.py", "test_tpch.py",
             "test_tpcds_formats.py")
