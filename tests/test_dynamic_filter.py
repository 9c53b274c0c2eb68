"""Dynamic filters from Python, with only spark.sql.extensions set (spark_sieve.configure): answers
against vanilla Spark (conftest's `vanilla`: a session without the extension, reading the same files), the
filter in the plan, and what explain reports."""

import re
from collections import Counter

import pytest

import spark_sieve as sieve
from plans import declined_joins, dynamic_filters
from vanilla_session import settings_on

STAR = "SELECT f.k, f.v, d.cat FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7"


@pytest.fixture(scope="module")
def tables(spark, vanilla, tmp_path_factory):
    d = tmp_path_factory.mktemp("star")
    spark.range(30000).selectExpr("CAST(id % 1500 AS INT) AS k", "id AS v", "CAST(id % 3 AS STRING) AS s") \
        .write.parquet(str(d / "fact"))
    spark.range(1500).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat",
                                 "CAST(id % 3 AS STRING) AS s").write.parquet(str(d / "dim"))
    for session in (spark, vanilla):
        session.read.parquet(str(d / "fact")).createOrReplaceTempView("fact")
        session.read.parquet(str(d / "dim")).createOrReplaceTempView("dim")
    spark.conf.set("spark.sieve.dynamicFilter.waitWeight", "0")
    yield d
    spark.conf.unset("spark.sieve.dynamicFilter.waitWeight")


def run(spark, query, **settings):
    """(DataFrame, rows) of `query` in `spark` under `settings` (on a vanilla session, their spark.sql ones)."""
    with settings_on(spark, settings):
        df = spark.sql(query)
        return df, df.collect()


def plan_text(df):
    return df._jdf.queryExecution().executedPlan().toString()


OUTER = "SELECT d.k, f.v FROM (SELECT * FROM dim WHERE cat = 5) d LEFT JOIN fact f ON f.k = d.k"
QUERIES = {"star": STAR, "semi": "SELECT * FROM fact WHERE k IN (SELECT k FROM dim WHERE cat < 3)",
           "composite": "SELECT f.v FROM fact f JOIN dim d ON f.k = d.k AND f.s = d.s WHERE d.cat = 11",
           "outer": OUTER}
JOINS = {"broadcast": "10485760", "sort-merge": "-1"}


def _answers(spark, vanilla, query, aqe, threshold):
    """(vanilla's rows, sieve's DataFrame) after checking sieve's rows equal vanilla's."""
    # every row tested: by default a broadcast join's filter is left out where the fact's footers show its
    # key spread over every row group, as here
    settings = {"spark.sql.adaptive.enabled": aqe, "spark.sql.autoBroadcastJoinThreshold": threshold,
                "spark.sql.adaptive.autoBroadcastJoinThreshold": threshold,
                "spark.sieve.dynamicFilter.sameStageRowTest": "true"}
    _, expected = run(vanilla, query, **settings)
    df, actual = run(spark, query, **settings)
    assert Counter(map(tuple, actual)) == Counter(map(tuple, expected))
    return expected, df


@pytest.mark.parametrize("aqe", ["true", "false"])
@pytest.mark.parametrize("name,join", [(q, j) for q in QUERIES for j in JOINS if (q, j) != ("outer", "broadcast")],
                         ids=lambda v: v)
def test_same_answer_as_vanilla(spark, vanilla, tables, aqe, name, join):
    _, df = _answers(spark, vanilla, QUERIES[name], aqe, JOINS[join])
    assert "DynamicFilter" in plan_text(df), (plan_text(df), sieve.explain(df, print_it=False))
    assert dynamic_filters(df)


@pytest.mark.parametrize("aqe", ["true", "false"])
def test_same_answer_as_vanilla_and_outer_join_declines_when_its_dropped_side_is_broadcast(spark, vanilla, tables,
                                                                                          aqe):
    """A LEFT JOIN drops only the fact's unmatched rows, and with a broadcast join the fact is the broadcast
    (build) side, which a filter never goes on: no filter, and explain names the join it declined."""
    _, df = _answers(spark, vanilla, OUTER, aqe, JOINS["broadcast"])
    assert dynamic_filters(df) == [] and "DynamicFilter" not in plan_text(df)
    declined = declined_joins(df)
    assert any(j.startswith("BroadcastHashJoin LeftOuter") and "is its broadcast build side" in why
               for j, why in declined), declined


def test_explain_reports_the_filter_and_what_it_did(spark, vanilla, tables):
    _, expected = run(vanilla, STAR)
    assert len(expected) == 300
    # by default the broadcast join probes the scan's rows in its stage, and the fact's footers show k spread
    # over every row group: no key set would skip one, so there is no filter, and explain says why
    df, rows = run(spark, STAR)
    assert sorted(rows) == sorted(expected)
    text = sieve.explain(df, print_it=False)
    assert len(rows) == 300 and "DynamicFilter [" not in text, text
    assert "k's values are spread over every row group (sampled footers)" in text, text
    # footers not read: the filter is pushed into the scan, but the join's probe drops the rows, no row test
    df, rows = run(spark, STAR, **{"spark.sieve.dynamicFilter.maxFooterFiles": "0"})
    assert sorted(rows) == sorted(expected)
    text = sieve.explain(df, print_it=False)
    assert "DynamicFilter [k#" in text
    assert "in-set of 15 keys" in text
    assert len(rows) == 300 and "not tested per row: the broadcast join it reads probes" in text, text
    assert "rows:    not counted: no filter tested per row" in text, text
    df, rows = run(spark, STAR, **{"spark.sieve.dynamicFilter.sameStageRowTest": "true"})
    assert sorted(rows) == sorted(expected) and dynamic_filters(df)
    text = sieve.explain(df, print_it=False)
    assert len(rows) == 300 and "30000 in, 300 out" in text, text


def test_explain_reports_files_and_row_groups_skipped(spark, vanilla, tables):
    # the fact in 4 files by key band (k DIV 375, written one band at a time: a sampled range partitioning
    # drew other bounds from run to run); band 2 keeps keys 750..1124, all in one file
    path = str(tables / "fact_by_key")
    fact = spark.read.parquet(str(tables / "fact"))
    for band in range(4):
        fact.where(f"k DIV 375 = {band}" if band < 3 else "k DIV 375 >= 3").coalesce(1).sortWithinPartitions("k") \
            .write.mode("overwrite" if band == 0 else "append").parquet(path)
    for session in (spark, vanilla):
        session.read.parquet(path).createOrReplaceTempView("fact_by_key")
    query = ("SELECT f.v FROM fact_by_key f JOIN (SELECT k, k DIV 375 AS band FROM dim) d ON f.k = d.k "
             "WHERE d.band = 2")
    _, expected = run(vanilla, query)
    df, actual = run(spark, query)
    assert Counter(map(tuple, actual)) == Counter(map(tuple, expected)) and len(actual) > 0
    text = sieve.explain(df, print_it=False)
    assert "footers of 4 files read" in text, text
    skipped = re.search(r"\n  scan: +(\d+) files, (\d+) row groups", text)
    assert skipped and int(skipped.group(1)) >= 2 and int(skipped.group(2)) >= 2, text
    assert dynamic_filters(df), "the skipped files are the dynamic filter's"
    # the operator's driver time (keys, decisions, footers): the footers took time, so the metric holds it
    driver = re.search(r"\n  driver: +(\d+) ms \(keys, decisions, file pruning\)", text)
    footers = re.search(r"skipped by file statistics .* in (\d+) ms", text)
    assert driver and footers and int(driver.group(1)) >= int(footers.group(1)), text


def test_switched_off_no_filter(spark, tables):
    for key in ("spark.sieve.enabled", "spark.sieve.dynamicFilter.enabled"):
        df, _ = run(spark, STAR, **{key: "false"})
        assert "DynamicFilter" not in plan_text(df)
        assert sieve.explain(df, print_it=False).endswith("no DynamicFilter in this plan")


def test_bad_setting_names_the_key(spark, tables):
    spark.conf.set("spark.sieve.dynamicFilter.maxPassRatio", "2")
    try:
        with pytest.raises(sieve.ConfigError, match=r"spark.sieve.dynamicFilter.maxPassRatio: 2.0 is outside \[0.0, 1.0\]"):
            spark.sql(STAR).collect()
    finally:
        spark.conf.unset("spark.sieve.dynamicFilter.maxPassRatio")


@pytest.mark.parametrize("aqe", ["true", "false"])
def test_a_data_source_v2_scan_gets_a_filter(spark, vanilla, tables, aqe):
    """Parquet read through Spark's data source V2 (`useV1SourceList` empty: a BatchScanExec, no Iceberg or Delta
    on the classpath on most lines) is filtered like a file scan: same answer, a DynamicFilter on the fact's
    BatchScan."""
    views = {}
    for session in (spark, vanilla):
        with settings_on(session, {"spark.sql.sources.useV1SourceList": ""}):
            session.read.parquet(str(tables / "fact")).createOrReplaceTempView("fact_v2")
            views[session] = session.table("fact_v2")
    query = STAR.replace("fact f", "fact_v2 f")
    with settings_on(spark, {"spark.sql.sources.useV1SourceList": ""}), \
            settings_on(vanilla, {"spark.sql.sources.useV1SourceList": ""}):
        _, df = _answers(spark, vanilla, query, aqe, "-1")
    assert "BatchScan" in plan_text(df), plan_text(df)
    assert dynamic_filters(df), sieve.explain(df, print_it=False)


def test_a_scan_waits_for_its_keys_no_longer_than_its_filter_saves(spark, vanilla, tables):
    """Under AQE, the fact's stage waits for the dimension's shuffle (sort-merge) only while its idle cores cost
    less than the filter saves: a dimension held 2 s by a UDF ends the wait, the fact is read unfiltered, and
    explain says why; counted cheaper (idleCoreSecondBytes), the same wait is kept and the filter runs."""
    def slow_cat(k, cat):
        if k == 0:
            import time
            time.sleep(2)
        return cat
    for session in (spark, vanilla):
        session.udf.register("slow_cat", slow_cat, "int")
    query = "SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE slow_cat(d.k, d.cat) = 7"
    joins = {"spark.sql.adaptive.enabled": "true", "spark.sql.autoBroadcastJoinThreshold": "-1",
             "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}
    _, expected = run(vanilla, query, **joins)
    assert len(expected) == 300
    # the wait priced as at plan time by default (the module's tables are too small for it otherwise)
    priced = {**joins, "spark.sieve.dynamicFilter.waitWeight": "1", "spark.sieve.dynamicFilter.stageStartBytes": "0"}
    try:
        # an idle core-second priced high: the wait ends within the dimension's first idle moments, 2 s before it does
        df, rows = run(spark, query, **priced, **{"spark.sieve.dynamicFilter.idleCoreSecondBytes": "256m"})
        assert sorted(rows) == sorted(expected)
        text = sieve.explain(df, print_it=False)
        assert not dynamic_filters(df) and "the wait was ended" in text, text
        df, rows = run(spark, query, **priced, **{"spark.sieve.dynamicFilter.idleCoreSecondBytes": "1k"})
        assert sorted(rows) == sorted(expected)
        assert dynamic_filters(df) and "30000 in, 300 out" in sieve.explain(df, print_it=False)
    finally:
        spark.conf.set("spark.sieve.dynamicFilter.waitWeight", "0")


def test_the_testing_switch_places_a_filter_every_benefit_check_declines(spark, vanilla, tables):
    """spark.sieve.testing.placeEveryFilter (internal: Spark's own suites and the answer tests run with it): a join
    whose creation side is the whole dimension, unfiltered, gets no filter by default and one with the switch, with
    the same rows as vanilla either way."""
    query = "SELECT d.cat, count(*) AS n, sum(f.v) AS v FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.cat"
    smj = {"spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}
    _, expected = run(vanilla, query, **smj)
    df, rows = run(spark, query, **smj)
    assert not dynamic_filters(df) and declined_joins(df), sieve.explain(df, print_it=False)
    forced, forced_rows = run(spark, query, **smj, **{"spark.sieve.testing.placeEveryFilter": "true"})
    assert dynamic_filters(forced), sieve.explain(forced, print_it=False)
    assert Counter(map(tuple, rows)) == Counter(map(tuple, expected)) == Counter(map(tuple, forced_rows))
