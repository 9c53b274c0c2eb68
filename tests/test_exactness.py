"""The exactness suite (tests/exactness.py) on plain Parquet and this line's table formats (a format without a
release for the line skips, naming it): the slice by default, every case with SIEVE_EXACTNESS=whole
(dev/exactness). One test per format: it runs every generated query, then fails listing
each answer unlike vanilla's (or new error) and each query with neither a filter placed nor its decline named."""

import os
import time

import pytest

import exactness
import exactness_tables
import table_formats

WHOLE = os.environ.get("SIEVE_EXACTNESS") == "whole"
# the whole suite runs a format's thousands of queries in one test, for longer than pytest-timeout's bound
pytestmark = pytest.mark.timeout(0 if WHOLE else 900)


def _check(suite, fmt):
    start = time.monotonic()
    outcomes, failures = [], []
    for case in suite.cases(whole=WHOLE):
        outcome = suite.run(case)
        outcomes.append(outcome)
        if outcome["difference"]:
            failures.append(f"{case.name}: {outcome['difference']}")
        elif not outcome["placed"] and not outcome["declined"] and not outcome["no_join"]:
            failures.append(f"{case.name}: no dynamic filter and no decline named\n  {suite.query(case)}")
    not_built = {name: why for name, why in exactness_tables.NOT_BUILT.items() if name.startswith(fmt)}
    line = exactness.tally(fmt, outcomes, time.monotonic() - start, not_built)
    assert not failures, f"{line}\n" + "\n".join(failures[:40])
    assert sum(o["placed"] for o in outcomes) >= len(outcomes) // 2, f"filters placed in under half: {line}"


def test_parquet_exactness(formats_spark, formats_vanilla, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("exact_parquet"))
    suite = exactness.Suite(formats_spark, formats_vanilla, {"parquet": exactness_tables.parquet_tables(formats_spark,
                                                                                                     root)}, root)
    _check(suite, "parquet")


def test_iceberg_exactness(formats_spark, formats_vanilla, tmp_path_factory):
    table_formats.require("iceberg")
    tables = {"iceberg": exactness_tables.iceberg_tables(formats_spark)}
    suite = exactness.Suite(formats_spark, formats_vanilla, tables, str(tmp_path_factory.mktemp("exact_ice")))
    _check(suite, "iceberg")


def test_delta_exactness(formats_spark, formats_vanilla, tmp_path_factory):
    table_formats.require("delta")
    root = str(tmp_path_factory.mktemp("exact_delta"))
    tables = {"delta": exactness_tables.delta_tables(formats_spark, root)}
    suite = exactness.Suite(formats_spark, formats_vanilla, tables, root)
    _check(suite, "delta")
