"""The exactness suite (tests/exactness.py) on plain Parquet and this line's table formats (a format without a
release for the line skips, naming it): the slice in the full test tier (CI) or with the module named, a third of it
in the quick one (`dev/test`: QUICK_THIN), every case with SIEVE_EXACTNESS=whole (dev/exactness). One test per
format: it runs every generated query, then fails listing each answer unlike vanilla's (or new error) and each query
with neither a filter placed nor its decline named."""

import os
import time

import pytest

import exactness
import exactness_tables
import table_formats
import tiers

WHOLE = os.environ.get("SIEVE_EXACTNESS") == "whole"
# the quick tier's share of the slice: every third case (3 and the 8 join / strategy / AQE combinations share no
# factor, so the rotation still reaches each); the slice with Delta and Iceberg took 335 s of 4.1's quick tier
QUICK_THIN = 3
# the whole suite runs a format's thousands of queries in one test, for longer than pytest-timeout's bound
pytestmark = pytest.mark.timeout(0 if WHOLE else 900)


@pytest.fixture(scope="module")
def thin(request):
    """Every how-many-th case of the slice runs: the quick tier's share, else all of it."""
    return QUICK_THIN if tiers.quick(request.config) and not WHOLE else 1


def _check(suite, fmt, thin):
    start = time.monotonic()
    outcomes, failures = [], []
    for case in suite.cases(whole=WHOLE, thin=thin):
        outcome = suite.run(case)
        outcomes.append(outcome)
        if outcome["difference"]:
            failures.append(f"{case.name}: {outcome['difference']}")
        elif not outcome["placed"] and not outcome["declined"] and not outcome["no_join"]:
            failures.append(f"{case.name}: no dynamic filter and no decline named\n  {suite.query(case)}")
    not_built = {name: why for name, why in exactness_tables.NOT_BUILT.items() if name.startswith(fmt)}
    label = fmt if thin == 1 else f"{fmt} (the quick tier's third of the slice)"
    line = exactness.tally(label, outcomes, time.monotonic() - start, not_built)
    assert not failures, f"{line}\n" + "\n".join(failures[:40])
    assert sum(o["placed"] for o in outcomes) >= len(outcomes) // 2, f"filters placed in under half: {line}"


def test_parquet_exactness(formats_spark, formats_vanilla, tmp_path_factory, thin):
    root = str(tmp_path_factory.mktemp("exact_parquet"))
    suite = exactness.Suite(formats_spark, formats_vanilla, {"parquet": exactness_tables.parquet_tables(formats_spark,
                                                                                                     root)}, root)
    _check(suite, "parquet", thin)


def test_iceberg_exactness(formats_spark, formats_vanilla, tmp_path_factory, thin):
    table_formats.require("iceberg")
    tables = {"iceberg": exactness_tables.iceberg_tables(formats_spark)}
    suite = exactness.Suite(formats_spark, formats_vanilla, tables, str(tmp_path_factory.mktemp("exact_ice")))
    _check(suite, "iceberg", thin)


def test_delta_exactness(formats_spark, formats_vanilla, tmp_path_factory, thin):
    table_formats.require("delta")
    root = str(tmp_path_factory.mktemp("exact_delta"))
    tables = {"delta": exactness_tables.delta_tables(formats_spark, root)}
    suite = exactness.Suite(formats_spark, formats_vanilla, tables, root)
    _check(suite, "delta", thin)
