"""TPC-DS (sf=0.01, tests/tpcds.py) with its fact tables stored as Delta tables and as Iceberg v2 tables
partitioned by their date key (truncate to months of keys), the dimensions as Parquet: each query of a slice
answers in spark-sieve's session as in vanilla Spark's (both with the formats' extensions), AQE on and, for
some, off, and the slice's plans hold dynamic filters on the format tables' scans. `SIEVE_TPCDS_FORMATS=all`
runs all 99, `SIEVE_TPCDS_FORMATS_SF=1` at another scale factor (dev/ and bench work; too long for every run of
the suite):

    SIEVE_TPCDS_FORMATS=all SIEVE_TPCDS_FORMATS_SF=1 dev/test --spark 4.0 tests/test_tpcds_formats.py

with PYSPARK_SUBMIT_ARGS="--driver-memory 6g pyspark-shell" at sf1: writing its Iceberg tables, partitioned,
runs out of the tests' default 1 GB driver."""

import os

import pytest

import table_formats
import tpcds
from answers import diff_answers
from forced import force, unforce
from plans import dynamic_filters

pytestmark = pytest.mark.skipif(not table_formats.formats(), reason=f"neither Delta nor Iceberg has a release for "
                                f"Spark {table_formats.LINE_NAME} on Maven Central")

# star joins on store_sales (7), five dimensions' filters on one store_sales scan (13: on Delta, one listing of
# the log per filter), returns joined to their sales (17), the widest star with an outer join (72), the three
# channels' sales and returns (80): a slice that CI can afford
SLICE = (7, 13, 17, 72, 80)
AQE_OFF = (17, 72)
# of the slice, the queries with a dynamic filter on a format table's scan (AQE on; all five when measured)
MIN_FILTERED = 4


# every query (1..99) with SIEVE_TPCDS_FORMATS=all, else the slice; each its own test (pytest-timeout's limit)
NUMBERS = range(1, 100) if os.environ.get("SIEVE_TPCDS_FORMATS") == "all" else SLICE
SCALE_FACTOR = float(os.environ.get("SIEVE_TPCDS_FORMATS_SF") or tpcds.TEST_SCALE_FACTOR)
FILTERED = {}  # format -> the queries whose plan (AQE on) held a dynamic filter


@pytest.fixture(scope="module")
def queries():
    return tpcds.queries()


@pytest.fixture(scope="module", params=["delta", "iceberg"])
def fmt(request, formats_spark, formats_vanilla, tmp_path_factory):
    """The format whose fact tables both sessions' TPC-DS views read (written for this module)."""
    table_formats.require(request.param)
    flat = tpcds.generate(tpcds.CACHE / f"sf{SCALE_FACTOR:g}", SCALE_FACTOR)
    where = str(tmp_path_factory.mktemp("tpcds-delta")) if request.param == "delta" else "ice.tpcds"
    names = tpcds.write_facts(formats_spark, flat, request.param, where)
    for session in (formats_spark, formats_vanilla):
        tpcds.register_facts(session, flat, names)
    formats_spark.sparkContext.setLogLevel("ERROR")
    force(formats_spark)  # dynamic filters on every join they may take (tests/forced.py), as test_tpcds
    yield request.param
    unforce(formats_spark)


def _rows(session, sql, aqe_on):
    session.conf.set("spark.sql.adaptive.enabled", str(aqe_on).lower())
    try:
        for statement in [s for s in sql.split(";") if s.strip()]:
            df = session.sql(statement)
            rows = [tuple(r) for r in df.collect()]
        return rows, df
    finally:
        session.conf.unset("spark.sql.adaptive.enabled")


@pytest.mark.parametrize("n", NUMBERS)
def test_tpcds_on_table_formats_matches_vanilla(formats_spark, formats_vanilla, fmt, queries, n):
    if n in tpcds.SKIPPED:
        pytest.skip(f"q{n}: {tpcds.SKIPPED[n]}")
    failures = []
    for aqe_on in (True, False) if n in AQE_OFF else (True,):
        where = f"q{n} (AQE {'on' if aqe_on else 'off'}, facts in {fmt})"
        expected, _ = _rows(formats_vanilla, queries[n], aqe_on)
        got, df = _rows(formats_spark, queries[n], aqe_on)
        d = diff_answers(expected, got)
        if d is not None:
            failures.append(f"{where}: {d}")
        if aqe_on and dynamic_filters(df):
            FILTERED.setdefault(fmt, []).append(n)
    assert not failures, "\n".join(failures)


def test_the_slice_holds_dynamic_filters(fmt):
    """The answers above check dynamic filters on the format tables' scans: most of the queries hold one."""
    filtered = FILTERED.get(fmt, [])
    print(f"\n{fmt}: dynamic filters in {filtered}")
    assert len(filtered) >= (MIN_FILTERED if NUMBERS == SLICE else 40), f"dynamic filters in {filtered} only"
