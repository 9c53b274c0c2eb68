"""TPC-DS answer equality: every query's answer with spark-sieve on equals vanilla Spark's.

Vanilla is the same session with ``spark.sieve.enabled=false`` (the extension then leaves every plan as
Spark makes it). Data (sf=0.01) and the 99 queries come from DuckDB's tpcds extension (tests/tpcds.py);
the data is cached under ``$SIEVE_CACHE/tpcds/sf0.01`` (``SIEVE_CACHE`` defaults to the repository's
git-ignored ``.cache``) and made in a few seconds when missing.

What runs, sized to keep the module near 6 minutes on a 2-core machine (each query costs 1-2 s of
mostly JIT and codegen time even on this tiny data, so runs are the budget):

- ``test_sieve_matches_vanilla[qNN-aqe_on]``: all 99 queries with AQE on, first sieve off (vanilla),
  then sieve on.
- ``test_sieve_matches_vanilla[qNN-aqe_off]``: AQE off for the fixed subset ``AQE_OFF_QUERIES`` (all 99
  with ``SIEVE_TPCDS_FULL=1``), sieve on, against the same vanilla answer: vanilla Spark's answer to a
  deterministic query does not depend on AQE, so it is computed once per query (with AQE on).
- Dynamic filters are forced onto every join the rule allows (``minApplicationBytes=0``: these tables
  are far below the 64 MB default); ``test_dynamic_filters_are_in_most_plans`` checks that they are in
  most plans, and ``test_sieve_matches_vanilla_beyond_the_in_set`` reruns the AQE-off subset with AQE
  on and ``maxInSetSize=2``, so that filters become exact bitmaps and bloom filters (both must occur).
- ``test_vanilla_spark_agrees_with_duckdb``: vanilla Spark's answers (reused, no new Spark runs) against
  DuckDB's on the same Parquet files. It guards the harness: a query that went wrong in translation
  would make "sieve equals vanilla" hold vacuously.
- ``test_tpcds_cluster``: five join-heavy queries with sieve on, on the standalone cluster (two worker
  JVMs), AQE on, against the vanilla answers computed above (or on the cluster when run alone).

Answers are compared as multisets of rows (order-insensitive; tpcds.py says why the final LIMIT is
stripped). Doubles are rounded to 6 significant digits, and when that alone disagrees, the rows are
paired again in sorted order with a relative tolerance of 1e-6 (for a value just at a rounding
boundary). Decimals are compared exactly: Spark's decimal arithmetic is exact and independent of the
plan, and a lost or duplicated row often moves a decimal sum by less than one part in a million.
27 of the 99 answers are empty at sf=0.01: for those the test only shows that sieve plans and runs.
"""

import os
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

import tpcds
from answers import diff_answers
from spark_sieve import explain as sieve_explain

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SIEVE_CACHE") or REPO / ".cache") / "tpcds"
SCALE_FACTOR = 0.01
QUERY_NUMBERS = range(1, 100)

FULL = os.environ.get("SIEVE_TPCDS_FULL", "") not in ("", "0", "false")
# With AQE off: a fixed set of the most varied join shapes, each with a non-empty answer at sf=0.01:
# correlated subquery (1), self-join of a CTE (2, 47), channel union + rollup (5, 77, 80), INTERSECT and
# IN subqueries (14), EXISTS / NOT EXISTS as semi / anti joins (16, 35, 69, 94), sales joined to their
# returns (17), left outer joins (40, 72, 75, 78), IN over a self-joined CTE (95).
AQE_OFF_QUERIES = [1, 2, 5, 14, 16, 17, 35, 40, 47, 69, 72, 75, 77, 78, 80, 94, 95]

# Join-heavy queries for the standalone cluster: a star join (7), returns joined back to their sales
# (17, 25), EXISTS / NOT EXISTS (69) and the widest star with an outer join (72).
CLUSTER_QUERIES = (7, 17, 25, 69, 72)

# DuckDB and Spark disagree on a few numbers by their own rules; the harness check allows for it.
DUCKDB_TOLERANCE = {
    66: (1e-4, "Spark divides decimals to 6 decimal places, DuckDB in doubles"),
    78: (1e-2, "round(41 / 40, 2): DuckDB rounds the double 1.025 to 1.02, Spark to 1.03"),
}

_VANILLA = {}          # query number -> (rows, columns) of vanilla Spark with AQE on, shared by tests


# ----------------------------------------------------------------------------------------- comparison

def _format_mismatch(title, columns, expected, got, d, limit=5, plan=None):
    only_exp, only_got = d
    lines = [title,
             f"  rows: expected {len(expected)}, got {len(got)}; "
             f"{len(only_exp)} only in expected, {len(only_got)} only in got",
             f"  columns: {', '.join(columns)}"]
    for name, rows in (("only in expected", only_exp), ("only in got", only_got)):
        if rows:
            lines.append(f"  {name} (first {min(limit, len(rows))} of {len(rows)}):")
            lines += [f"    {r}" for r in rows[:limit]]
    if plan:
        plan_lines = plan.splitlines()
        lines.append("  physical plan of the failing run" +
                     (f" (first 80 of {len(plan_lines)} lines)" if len(plan_lines) > 80 else "") + ":")
        lines += ["    " + p for p in plan_lines[:80]]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- running

def _settings(sieve_on, aqe_on):
    return f"spark.sieve.enabled={str(sieve_on).lower()}, spark.sql.adaptive.enabled={str(aqe_on).lower()}"


def _short(e):
    text = str(e)
    return text if len(text) < 4000 else text[:4000] + " ..."


def _run(spark, sql, sieve_on, aqe_on):
    """``(rows, columns, DataFrame)`` of one query under the given settings."""
    spark.conf.set("spark.sieve.enabled", "true" if sieve_on else "false")
    spark.conf.set("spark.sql.adaptive.enabled", "true" if aqe_on else "false")
    df = spark.sql(sql)
    return [tuple(r) for r in df.collect()], df.columns, df


def _vanilla_answer(spark, queries, n, cache=None):
    """Vanilla Spark's answer (sieve off, AQE on); a failure here is the harness's, not sieve's."""
    if cache is not None and n in cache:
        return cache[n]
    try:
        rows, columns, _ = _run(spark, queries[n], sieve_on=False, aqe_on=True)
    except Exception as e:     # noqa: BLE001
        pytest.fail(f"TPC-DS q{n} fails on vanilla Spark ({_settings(False, True)}). If Spark cannot run "
                    f"it, list it in tpcds.SKIPPED with this reason:\n{_short(e)}", pytrace=False)
    if cache is not None:
        cache[n] = (rows, columns)
    return rows, columns


def _check_sieve(spark, queries, n, aqe_on, expected, where=""):
    """Runs query ``n`` with sieve on and fails with the differing rows unless it equals ``expected``;
    returns the DataFrame run."""
    expected_rows, columns = expected
    settings = _settings(True, aqe_on)
    try:
        got, _, df = _run(spark, queries[n], sieve_on=True, aqe_on=aqe_on)
    except Exception as e:     # noqa: BLE001
        pytest.fail(f"TPC-DS q{n}{where} fails with {settings} but runs on vanilla Spark:\n{_short(e)}",
                    pytrace=False)
    d = diff_answers(expected_rows, got)
    if d is not None:
        pytest.fail(_format_mismatch(
            f"TPC-DS q{n}{where}: with {settings} the answer differs from vanilla Spark's "
            f"({_settings(False, True)}).\n  expected = vanilla, got = sieve; the query is "
            f"tpcds.queries()[{n}] (tests/tpcds.py), data sf={SCALE_FACTOR} in {CACHE}",
            columns, expected_rows, got, d, plan=df._jdf.queryExecution().executedPlan().toString()),
            pytrace=False)
    return df


# ------------------------------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def queries():
    return tpcds.queries()


@pytest.fixture(scope="module")
def tpcds_dir():
    return tpcds.generate(CACHE / f"sf{SCALE_FACTOR}", SCALE_FACTOR)


@pytest.fixture(scope="module")
def tpcds_spark(spark, tpcds_dir):
    spark.sparkContext.setLogLevel("ERROR")
    tpcds.register(spark, tpcds_dir)
    # sf=0.01 tables are far below the 64 MB a dynamic filter waits for by default: without this, no
    # query here would get one, and "sieve equals vanilla" would say nothing about them
    spark.conf.set("spark.sieve.dynamicFilter.minApplicationBytes", "0")
    yield spark
    for key in ("spark.sieve.enabled", "spark.sql.adaptive.enabled",
                "spark.sieve.dynamicFilter.minApplicationBytes", "spark.sieve.dynamicFilter.maxInSetSize"):
        spark.conf.unset(key)


# ------------------------------------------------------------------------------------------- tests

def _cases():
    for n in QUERY_NUMBERS:
        marks = [pytest.mark.skip(reason=f"q{n}: {tpcds.SKIPPED[n]}")] if n in tpcds.SKIPPED else []
        yield pytest.param(n, True, id=f"q{n:02d}-aqe_on", marks=marks)
        if FULL or n in AQE_OFF_QUERIES:
            yield pytest.param(n, False, id=f"q{n:02d}-aqe_off", marks=marks)


@pytest.mark.parametrize("n, aqe_on", list(_cases()))
def test_sieve_matches_vanilla(tpcds_spark, queries, n, aqe_on):
    expected = _vanilla_answer(tpcds_spark, queries, n, cache=_VANILLA)
    _check_sieve(tpcds_spark, queries, n, aqe_on, expected)


def test_dynamic_filters_are_in_most_plans(tpcds_spark, queries):
    """Filters are placed across the suite (planning only; they are placed as joins are planned, so the
    physical plan holds them): the answers above cover dynamic filters."""
    tpcds_spark.conf.set("spark.sieve.enabled", "true")
    with_filter = [n for n in QUERY_NUMBERS if n not in tpcds.SKIPPED and "DynamicFilter" in
                   tpcds_spark.sql(queries[n].split(";")[0])._jdf.queryExecution().executedPlan().toString()]
    print(f"\n{len(with_filter)} queries get a dynamic filter")
    assert len(with_filter) >= 60, f"only {len(with_filter)} queries get a dynamic filter: {with_filter}"


def test_sieve_matches_vanilla_beyond_the_in_set(tpcds_spark, queries):
    """The AQE-off subset again with AQE on and at most 2 keys per IN-set: every filter with more keys
    is an exact bitmap or a bloom filter (collected in one pass when AQE knows the row count)."""
    tpcds_spark.conf.set("spark.sieve.dynamicFilter.maxInSetSize", "2")
    kinds = Counter()
    try:
        for n in AQE_OFF_QUERIES:
            expected = _vanilla_answer(tpcds_spark, queries, n, cache=_VANILLA)
            df = _check_sieve(tpcds_spark, queries, n, True, expected, where=" (maxInSetSize=2)")
            text = sieve_explain(df, print_it=False)
            kinds.update(k for k in ("in-set", "bitmap", "bloom filter", "empty") if f"filter:  {k}" in text)
    finally:
        tpcds_spark.conf.unset("spark.sieve.dynamicFilter.maxInSetSize")
    print(f"\nfilter kinds: {dict(kinds)}")
    assert kinds["bitmap"] > 0 and kinds["bloom filter"] > 0, f"filter kinds seen: {dict(kinds)}"


def test_every_query_is_covered(queries):
    assert sorted(queries) == list(QUERY_NUMBERS)
    assert set(tpcds.SKIPPED) <= set(queries)


def test_vanilla_spark_agrees_with_duckdb(tpcds_spark, queries, tpcds_dir):
    """The transpiled queries answer on Spark what the original ones answer on DuckDB, over the same
    Parquet files; numbers as floats (the engines type avg and division differently)."""
    import duckdb
    con = duckdb.connect()
    for table in tpcds.TABLES:
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{tpcds_dir / table}/*.parquet')")
    failures = []
    for n, sql in tpcds.duckdb_queries(tpcds.connect()).items():
        if n in tpcds.SKIPPED:
            continue
        rows, columns = _vanilla_answer(tpcds_spark, queries, n, cache=_VANILLA)
        want = con.execute(tpcds.transpile(sql, dialect="duckdb")).fetchall()
        rel_tol = DUCKDB_TOLERANCE.get(n, (1e-6, ""))[0]
        d = diff_answers(_as_floats(want), _as_floats(rows), rel_tol=rel_tol)
        if d is not None:
            failures.append(_format_mismatch(f"q{n}: expected = DuckDB, got = vanilla Spark", columns,
                                             want, rows, d))
    assert not failures, "transpiled queries that answer differently on Spark:\n" + "\n".join(failures)


def _as_floats(rows):
    def conv(v):
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return float(v)
        return v
    return [tuple(conv(v) for v in r) for r in rows]


def test_tpcds_cluster(cluster_spark, queries, tpcds_dir):
    """Join-heavy queries with sieve on equal vanilla's when the executors run in their own JVMs."""
    cluster_spark.sparkContext.setLogLevel("ERROR")
    tpcds.register(cluster_spark, tpcds_dir)
    cluster_spark.conf.set("spark.sieve.dynamicFilter.minApplicationBytes", "0")  # as in tpcds_spark
    try:
        for n in CLUSTER_QUERIES:
            # vanilla's answer does not depend on where it runs: reuse the local one when there is one
            expected = _vanilla_answer(cluster_spark, queries, n, cache=_VANILLA)
            _check_sieve(cluster_spark, queries, n, True, expected, where=" on the standalone cluster")
    finally:
        for key in ("spark.sieve.enabled", "spark.sql.adaptive.enabled", "spark.sieve.dynamicFilter.minApplicationBytes"):
            cluster_spark.conf.unset(key)
