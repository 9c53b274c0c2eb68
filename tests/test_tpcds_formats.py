"""TPC-DS (sf=0.01, tests/tpcds.py) with its fact tables stored as Delta tables and as Iceberg v2 tables
partitioned by their date key (truncate to months of keys), the dimensions as Parquet: each query of a slice
answers in spark-sieve's session as in vanilla Spark's (both with the formats' extensions), AQE on and, for
some, off, and the slice's plans hold dynamic filters on the format tables' scans. `SIEVE_TPCDS_FORMATS=all`
runs all 99 (dev/ and bench work; too long for every run of the suite)."""

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


def _numbers(queries):
    every = os.environ.get("SIEVE_TPCDS_FORMATS") == "all"
    return [n for n in (sorted(queries) if every else SLICE) if n not in tpcds.SKIPPED]


@pytest.fixture(scope="module")
def queries():
    return tpcds.queries()


@pytest.fixture(scope="module", params=["delta", "iceberg"])
def fmt(request, formats_spark, formats_vanilla, tmp_path_factory):
    """The format whose fact tables both sessions' TPC-DS views read (written for this module)."""
    table_formats.require(request.param)
    flat = tpcds.generate(tpcds.CACHE / f"sf{tpcds.TEST_SCALE_FACTOR}", tpcds.TEST_SCALE_FACTOR)
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


def test_tpcds_on_table_formats_matches_vanilla(formats_spark, formats_vanilla, fmt, queries):
    failures, filtered = [], []
    cases = [(n, True) for n in _numbers(queries)] + [(n, False) for n in AQE_OFF if n in _numbers(queries)]
    for n, aqe_on in cases:
        where = f"q{n} (AQE {'on' if aqe_on else 'off'}, facts in {fmt})"
        expected, _ = _rows(formats_vanilla, queries[n], aqe_on)
        try:
            got, df = _rows(formats_spark, queries[n], aqe_on)
        except Exception as e:  # noqa: BLE001 - every query's outcome is reported, not only the first failure's
            failures.append(f"{where} fails with spark-sieve, not on vanilla: {str(e).splitlines()[0][:300]}")
            continue
        d = diff_answers(expected, got)
        if d is not None:
            failures.append(f"{where}: {d}")
        if aqe_on and dynamic_filters(df):
            filtered.append(n)
    assert not failures, "\n".join(failures)
    print(f"\n{fmt}: {len(cases)} runs equal vanilla's; dynamic filters in {filtered}")
    if os.environ.get("SIEVE_TPCDS_FORMATS") != "all":
        assert len(filtered) >= MIN_FILTERED, f"dynamic filters in {filtered} only"
