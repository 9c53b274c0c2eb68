"""spark-sieve never changes an answer and never raises an error vanilla Spark would not.

Each test is a shape a new user may write outside the star joins of the feature tests, run against
vanilla Spark (conftest's `vanilla`: a session without the extension, reading the same files), with AQE on
and off and broadcast and sort-merge joins, with dynamic filters made to fire on these tiny tables
(``waitWeight=0``, ``minSizeRatio=1``). Each also asserts the plan: where spark-sieve must decline
(a test named so), no dynamic filter or the order as written; where it may act, the filter is there or the
predicates reordered, so the answer proves something.
"""

import os
from collections import Counter

import pytest

import spark_sieve as sieve
from plans import (bulk_filter_lowered, declined_joins, dynamic_filters, joins_innermost_first, logical_plans, optimized_shape,
                   partitions_read)
from reference import exists_query, same_rows
from spark_line import COLLATIONS, NEEDS_COLLATIONS
from vanilla_session import settings_on, sieve_rules

FORCE = {"spark.sieve.dynamicFilter.waitWeight": "0", "spark.sieve.dynamicFilter.minSizeRatio": "1"}
JOINS = {"broadcast": "10485760", "sort-merge": "-1"}


@pytest.fixture(scope="module")
def tables(spark, vanilla, tmp_path_factory):
    """Parquet tables, each a temp view of the same name in both sessions (spark-sieve's and vanilla's)."""
    root = tmp_path_factory.mktemp("answers")

    def view(name):
        for session in (spark, vanilla):
            session.read.parquet(str(root / name)).createOrReplaceTempView(name)

    def table(name, rows, schema):
        spark.createDataFrame(rows, schema).write.parquet(str(root / name))
        view(name)

    table("fs", [("Apple", 1), ("apple", 2), ("APPLE", 3), ("pear", 4)], "s string, v int")
    table("ds", [("apple", 1), ("plum", 2)], "s string, c int")
    if COLLATIONS:
        spark.sql("SELECT collate(s, 'UTF8_LCASE') AS s, v FROM fs").write.parquet(str(root / "fsl"))
        spark.sql("SELECT collate(s, 'UTF8_LCASE') AS s, c FROM ds").write.parquet(str(root / "dsl"))
        for name in ("fsl", "dsl"):
            view(name)
    table("fd", [(0.0, 1), (-0.0, 2), (float("nan"), 3), (1.0, 4)], "d double, v int")
    table("dd", [(-0.0, 1), (float("nan"), 1), (2.0, 2)], "d double, c int")
    table("lb", [(1,), (2,)], "x int")
    table("la", [(1, "a1"), (2, "a2")], "k int, v string")
    table("lx", [(0, 1), (5, 2)], "k int, c int")
    table("rt", [(1, 0), (2, 5), (3, 4)], "k int, x int")
    table("rd", [(1,), (3,)], "k int")
    spark.range(2000).selectExpr("id % 100 AS k", "id AS v").write.parquet(str(root / "of"))
    spark.range(100).selectExpr("id AS k", "id % 3 AS c").write.parquet(str(root / "od"))
    spark.range(100).selectExpr("id AS k").write.parquet(str(root / "nd"))
    spark.range(1000).selectExpr("id % 100 AS k", "id AS v").write.parquet(str(root / "nf"))
    # a fact partitioned by day (100 partitions), a date dim and an item dim
    spark.range(20000).selectExpr("CAST(id DIV 200 AS INT) AS dt", "CAST(id % 500 AS INT) AS item", "id AS v") \
        .write.partitionBy("dt").parquet(str(root / "pf"))
    spark.range(100).selectExpr("CAST(id AS INT) AS dt", "CAST(id % 10 AS INT) AS month").write.parquet(str(root / "pdate"))
    spark.range(500).selectExpr("CAST(id AS INT) AS item", "CAST(id % 50 AS INT) AS cat").write.parquet(str(root / "pitem"))
    for name in ("of", "od", "nd", "nf", "pf", "pdate", "pitem"):
        view(name)
    return root


def run(spark, query, settings):
    """(DataFrame, rows) of `query` in `spark` under `settings`."""
    with settings_on(spark, settings):
        df = spark.sql(query)
        return df, Counter(map(tuple, df.collect()))


def both(spark, vanilla, query, **settings):
    """(vanilla's rows, sieve's rows, sieve's DataFrame) with dynamic filters forced in spark-sieve's session;
    vanilla's rows from the session without the extension, with the same Spark settings."""
    settings = {**FORCE, **settings}
    _, expected = run(vanilla, query, settings)
    df, actual = run(spark, query, settings)
    return expected, actual, df


def join_settings(aqe, join):
    return {"spark.sql.adaptive.enabled": aqe, "spark.sql.autoBroadcastJoinThreshold": JOINS[join],
            "spark.sql.adaptive.autoBroadcastJoinThreshold": JOINS[join]}


aqe_and_joins = pytest.mark.parametrize("aqe,join", [(a, j) for a in ("true", "false") for j in JOINS])


# 1. keys whose equality is not byte equality ------------------------------------------------------

@aqe_and_joins
@pytest.mark.parametrize("query", [
    "SELECT f.v FROM fs f JOIN ds d ON collate(f.s, 'UTF8_LCASE') = collate(d.s, 'UTF8_LCASE') WHERE d.c = 1",
    "SELECT f.v FROM fs f JOIN ds d ON collate(f.s, 'UNICODE_CI') = collate(d.s, 'UNICODE_CI') WHERE d.c = 1",
    "SELECT f.v FROM fsl f JOIN dsl d ON f.s = d.s WHERE d.c = 1",
    "SELECT v FROM fs WHERE collate(s, 'UTF8_LCASE') IN (SELECT collate(s, 'UTF8_LCASE') FROM ds WHERE c = 1)",
], ids=["utf8_lcase", "unicode_ci", "collated-columns", "in-subquery"])
@NEEDS_COLLATIONS
def test_collated_keys_are_filtered_by_collation_key_or_declined(spark, vanilla, tables, aqe, join, query):
    expected, actual, df = both(spark, vanilla, query, **join_settings(aqe, join))
    assert sorted(actual.elements()) == sorted(expected.elements()) == [(1,), (2,), (3,)]
    filters = [str(f.simpleString(25)) for f in dynamic_filters(df)]
    # Spark joins collated columns on their collation key (RewriteCollationJoin): a filter on the
    # join's keys is then exact; a filter on the raw strings is what must never happen
    assert all(f.startswith("DynamicFilter [collationkey(") for f in filters), filters
    if not filters:
        # declined (measured: every case here, a non-binary collation's keys, or collation keys that are an
        # expression over the scan), and explain says why for the collated join
        declined = declined_joins(df)
        assert any("collat" in j for j, _ in declined), (declined, sieve.explain(df, print_it=False))


@aqe_and_joins
def test_float_keys_match_minus_zero_and_nan_as_the_join_does(spark, vanilla, tables, aqe, join):
    expected, actual, df = both(spark, vanilla, "SELECT f.v FROM fd f JOIN dd d ON f.d = d.d WHERE d.c = 1",
                                **join_settings(aqe, join))
    assert actual == expected == Counter({(1,): 1, (2,): 1, (3,): 1})
    assert dynamic_filters(df), "the float join should still be filtered (through the join's normalised keys)"


@NEEDS_COLLATIONS
def test_collated_bulk_filter_keeps_every_equal_key(spark, vanilla, tables, tmp_path):
    values = tmp_path / "fruit.txt"
    values.write_text("apple\n")
    tree = sieve.include("s", str(values))
    df = tree.apply(spark.table("fsl"))
    ok, diff = same_rows(df, exists_query(vanilla, vanilla.table("fsl"), tree))
    assert ok, f"differs from vanilla's EXISTS (extra, missing): {diff}"
    assert sorted(r.v for r in df.collect()) == [1, 2, 3]
    assert bulk_filter_lowered(df), logical_plans(df)


# 2. a filter wired to the join it was made for, and no other -------------------------------------

@aqe_and_joins
@pytest.mark.parametrize("query", [
    "SELECT * FROM lb LEFT JOIN la ON lb.x = la.k JOIN lx ON coalesce(la.k, 0) = lx.k WHERE lx.c = 1",
    "SELECT * FROM lb LEFT JOIN la ON lb.x = la.k JOIN lx ON la.k <=> lx.k WHERE lx.c = 1",
    "SELECT * FROM lb WHERE EXISTS (SELECT 1 FROM la RIGHT JOIN lx ON la.k = lx.k "
    "WHERE coalesce(la.k, 0) = lb.x - 1 AND lx.c = 1)",
    "SELECT lb.x FROM lb LEFT JOIN la ON lb.x = la.k WHERE coalesce(la.k, 0) IN (SELECT k FROM lx WHERE c = 1)",
], ids=["coalesce", "null-safe", "semi-over-outer", "in-over-outer"])
def test_a_filter_only_serves_its_own_join_and_declines_the_others(spark, vanilla, tables, aqe, join, query):
    expected, actual, df = both(spark, vanilla, query, **join_settings(aqe, join))
    assert actual == expected
    # the join on coalesce(la.k, 0) (or la.k <=> ...) of the outer join's nullable side gets no filter: spark-sieve
    # declines it, with its reason
    declined = declined_joins(df)
    assert any("coalesce(k#" in j for j, _ in declined), (declined, sieve.explain(df, print_it=False))
    # any filter placed is another join's (semi-over-outer, AQE off, sort-merge: the RIGHT JOIN's la.k by lx.k)
    filters = [str(f.simpleString(25)) for f in dynamic_filters(df)]
    assert not [f for f in filters if "coalesce" in f or "isnull" in f or "-" in f], filters


# 3, 4. predicates that can raise, or are nondeterministic, keep their place ----------------------

def _shape(session, query, settings):
    """The optimised plan of `query` in `session` without expression ids (a plan only, nothing runs)."""
    with settings_on(session, settings):
        return optimized_shape(session.sql(query))


def assert_reordered(spark, vanilla, query, settings=None):
    """spark-sieve's subquery ordering moved something in `query` (its optimised plan is not vanilla's)."""
    ours, theirs = _shape(spark, query, settings or {}), _shape(vanilla, query, settings or {})
    assert ours != theirs, f"expected spark-sieve to reorder this filter, but its plan is vanilla's:\n{ours}"


def assert_as_written(spark, vanilla, query, settings=None):
    """spark-sieve's subquery ordering left `query` as written (its optimised plan is vanilla's)."""
    ours, theirs = _shape(spark, query, settings or {}), _shape(vanilla, query, settings or {})
    assert ours == theirs, f"spark-sieve reordered what must keep its place:\n{ours}\nvanilla:\n{theirs}"


# the same filters with the raising or nondeterministic predicate replaced by a harmless one: these the rule
# does reorder (cheap row-local predicates first), so its declining above is the guard's doing
GUARD_FREE = {
    "or-guard": "SELECT count(*) FROM rt f WHERE f.x = 0 OR (EXISTS (SELECT 1 FROM rd WHERE rd.k = f.k) AND f.x > 1)",
    "and-of-guards": "SELECT count(*) FROM rt f WHERE (f.x = 0 OR EXISTS (SELECT 1 FROM rd WHERE rd.k = f.k)) "
                     "AND (f.x = 0 OR f.x > 1)",
}


@pytest.mark.parametrize("aqe", ["true", "false"])
@pytest.mark.parametrize("shape,query,answer", [
    ("or-guard",
     "SELECT count(*) FROM rt f WHERE f.x = 0 OR (EXISTS (SELECT 1 FROM rd WHERE rd.k = f.k) AND 10 / f.x > 1)",
     [(2,)]),
    ("and-of-guards",
     "SELECT count(*) FROM rt f WHERE (f.x = 0 OR EXISTS (SELECT 1 FROM rd WHERE rd.k = f.k)) "
     "AND (f.x = 0 OR 10 / f.x > 1)", [(2,)]),
], ids=["or-guard", "and-of-guards"])
def test_reordering_declines_to_move_a_guard_into_an_error(spark, vanilla, tables, aqe, shape, query, answer):
    settings = {"spark.sql.adaptive.enabled": aqe}
    expected, actual, _ = both(spark, vanilla, query, **settings)
    assert actual == expected == Counter(answer)
    assert_as_written(spark, vanilla, query, settings)
    assert_reordered(spark, vanilla, GUARD_FREE[shape], settings)
    expected, actual, _ = both(spark, vanilla, GUARD_FREE[shape], **settings)
    assert actual == expected


@pytest.mark.parametrize("aqe", ["true", "false"])
def test_reordering_declines_to_move_a_nondeterministic_predicate(spark, vanilla, tables, aqe):
    query = ("SELECT f.v FROM of f WHERE EXISTS (SELECT 1 FROM od d WHERE d.k = f.k AND d.c = 1) "
             "OR rand(3) < 0.1")
    settings = {"spark.sql.adaptive.enabled": aqe, "spark.sql.shuffle.partitions": "1",
                "spark.sql.autoBroadcastJoinThreshold": "-1"}
    expected, actual, df = both(spark, vanilla, query, **settings)
    assert actual == expected
    assert_as_written(spark, vanilla, query, settings)
    # with a deterministic predicate in rand's place the rule puts it first
    assert_reordered(spark, vanilla, query.replace("rand(3) < 0.1", "f.v < 200"), settings)


# the seed cost model runs the IN (a semi join, cost 0.1) before the OR of two EXISTS (10 x 0.2)
REORDERED_BY_SEED = ("SELECT count(*) FROM rt f WHERE (EXISTS (SELECT 1 FROM rd WHERE rd.k = f.k) "
                     "OR EXISTS (SELECT 1 FROM rd WHERE rd.k = f.x)) AND f.k IN (SELECT k FROM rd)")


def test_subquery_ordering_has_its_own_switch(spark, vanilla, tables):
    assert spark.conf.get("spark.sieve.subqueryOrder.enabled") == "true"
    off = {"spark.sieve.subqueryOrder.enabled": "false"}
    # on (the default): the IN's semi join runs first, below the OR's existence joins; off: as written
    expected, actual, on_df = both(spark, vanilla, REORDERED_BY_SEED)
    assert actual == expected == Counter({(2,): 1})
    assert joins_innermost_first(on_df)[0] == "LeftSemi", optimized_shape(on_df)
    assert_reordered(spark, vanilla, REORDERED_BY_SEED)
    expected, actual, off_df = both(spark, vanilla, REORDERED_BY_SEED, **off)
    assert actual == expected
    assert joins_innermost_first(off_df)[0].startswith("ExistenceJoin"), optimized_shape(off_df)
    assert_as_written(spark, vanilla, REORDERED_BY_SEED, off)
    # two subqueries of one cost (0.1 each) keep their written order whatever the switch
    query = ("SELECT count(*) FROM rt f WHERE EXISTS (SELECT 1 FROM rd WHERE rd.k = f.k) AND f.x > 1 "
             "AND f.k IN (SELECT k FROM rd)")
    for settings in ({}, off):
        expected, actual, _ = both(spark, vanilla, query, **settings)
        assert actual == expected
        assert_as_written(spark, vanilla, query, settings)


# 5. a creation side that cannot be shared for certain --------------------------------------------

@pytest.mark.parametrize("aqe", ["true", "false"])
def test_no_filter_when_the_creation_side_is_not_shared_for_certain(spark, vanilla, tables, aqe):
    query = ("SELECT count(*) FROM (SELECT k FROM nd WHERE rand() < 0.5) d LEFT JOIN nf f ON f.k = d.k "
             "WHERE f.v IS NULL")
    settings = {**FORCE, "spark.sql.exchange.reuse": "false", "spark.sql.adaptive.enabled": aqe,
                "spark.sql.autoBroadcastJoinThreshold": "-1"}
    df, rows = run(spark, query, settings)
    assert rows == run(vanilla, query, settings)[1] == Counter({(0,): 1}), \
        "every dim key has 10 fact rows: none may come back unmatched"
    assert dynamic_filters(df) == []
    # deterministic, but exchange reuse off: the side would be computed twice, so no filter either
    query = "SELECT count(*) FROM nd d JOIN nf f ON f.k = d.k WHERE d.k < 5"
    df, rows = run(spark, query, settings)
    assert rows == run(vanilla, query, settings)[1] == Counter({(50,): 1})
    assert dynamic_filters(df) == []


# 8. Spark's dynamic partition pruning is kept ----------------------------------------------------

@aqe_and_joins
@pytest.mark.parametrize("item_first", [True, False], ids=["item-then-date", "date-then-item"])
def test_dynamic_partition_pruning_is_never_lost(spark, vanilla, tables, aqe, join, item_first):
    joins = ["JOIN pitem i ON f.item = i.item", "JOIN pdate d ON f.dt = d.dt"]
    query = (f"SELECT count(*), sum(f.v) FROM pf f {' '.join(joins if item_first else joins[::-1])} "
             "WHERE d.month = 3 AND i.cat = 7")
    settings = join_settings(aqe, join)
    plain, expected = run(vanilla, query, {**FORCE, **settings})
    df, actual = run(spark, query, {**FORCE, **settings})
    assert actual == expected
    [(count, _)] = actual.keys()
    assert count > 0, "the query must select rows"
    assert partitions_read(df) <= partitions_read(plain)
    if join == "broadcast":
        # DPP's 10 days of month 3, of the fact's 100 (unpartitioned scans report no partitions)
        assert partitions_read(plain) == 10
    # the fact scan is the item join's application side: its dynamic filter and DPP both act
    assert dynamic_filters(df), "the item join should get its dynamic filter"


# 10. Spark's own golden file: a correlated EXISTS over a LEFT JOIN of CTEs -----------------------

@pytest.mark.parametrize("aqe", ["true", "false"])
def test_exists_over_a_left_join_of_ctes(spark, vanilla, tables, aqe):
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW emp(id, emp_name, dept_id) AS VALUES (100, 'emp 1', 10), "
              "(100, 'emp 1', 10), (200, 'emp 2', 10), (300, 'emp 3', 20), (400, 'emp 4', 30), (500, 'emp 5', NULL)")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW dept(dept_id, dept_name) AS VALUES (10, 'dept 1'), (20, 'dept 2'), "
              "(30, 'dept 3')")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW bonus(emp_name, bonus_amt) AS VALUES ('emp 1', 10.00), "
              "('emp 1', 20.00), ('emp 2', 300.00), ('emp 3', 300.00), ('emp 4', 100.00)")
    for name in ("emp", "dept", "bonus"):
        path = str(tables / f"cte_{name}")
        if not os.path.exists(path):
            spark.table(name).write.parquet(path)
        for session in (spark, vanilla):
            session.read.parquet(path).createOrReplaceTempView(name)
    query = """WITH emp_cte AS (SELECT * FROM emp WHERE id >= 100 AND id <= 300),
                    dept_cte AS (SELECT * FROM dept WHERE dept_id = 10)
               SELECT DISTINCT b.emp_name, b.bonus_amt FROM bonus b, emp_cte e, dept d
               WHERE e.dept_id = d.dept_id AND e.emp_name = b.emp_name
                 AND EXISTS (SELECT * FROM emp_cte a LEFT JOIN dept_cte b ON a.dept_id = b.dept_id
                             WHERE e.emp_name = a.emp_name)"""
    expected, actual, df = both(spark, vanilla, query, **{"spark.sql.adaptive.enabled": aqe})
    assert actual == expected and len(expected) == 4
    assert dynamic_filters(df)


# 6. bulk-filter values compared as Spark's = compares them ---------------------------------------

@pytest.fixture(scope="module")
def typed(spark, vanilla, tables):
    for session in (spark, vanilla):
        session.createDataFrame([(1, 10), (2, 20), (None, 30)], "n int, x int").createOrReplaceTempView("nums")
        session.sql("SELECT CAST(d AS DATE) AS d FROM VALUES ('2024-01-01'), ('2024-01-02') AS t(d)") \
            .createOrReplaceTempView("days")

    def values(name, sql):
        path = str(tables / f"values_{name}")
        if not os.path.exists(path):
            spark.sql(sql).write.parquet(path)
        return path

    return values


@pytest.mark.parametrize("aqe", ["true", "false"])
@pytest.mark.parametrize("name,table,column,values_sql", [
    ("double", "nums", "n", "SELECT * FROM VALUES (1.5D), (2.0D) AS t(v)"),
    ("decimal", "nums", "n", "SELECT * FROM VALUES (CAST(1.50 AS DECIMAL(5,2))), (CAST(2.01 AS DECIMAL(5,2))) AS t(v)"),
    ("bigint", "nums", "n", "SELECT * FROM VALUES (2L), (4294967297L) AS t(v)"),
    ("timestamp", "days", "d",
     "SELECT * FROM VALUES (TIMESTAMP'2024-01-01 10:00:00'), (TIMESTAMP'2024-01-02 00:00:00') AS t(v)"),
])
def test_include_is_exists_whatever_the_value_type(spark, vanilla, typed, aqe, name, table, column, values_sql):
    path = typed(name, values_sql)
    for session in (spark, vanilla):
        session.conf.set("spark.sql.adaptive.enabled", aqe)
    try:
        exists = vanilla.sql(f"SELECT * FROM {table} WHERE {column} IN (SELECT v FROM parquet.`{path}`)").collect()
        not_exists = vanilla.sql(f"SELECT * FROM {table} t WHERE NOT EXISTS "
                                 f"(SELECT 1 FROM parquet.`{path}` v WHERE v.v = t.{column})").collect()
        included = sieve.include(column, path).apply(spark.table(table))
        excluded = sieve.exclude(column, path).apply(spark.table(table))
        assert Counter(included.collect()) == Counter(exists)
        assert Counter(excluded.collect()) == Counter(not_exists)
        assert bulk_filter_lowered(included) and bulk_filter_lowered(excluded), logical_plans(included)
    finally:
        for session in (spark, vanilla):
            session.conf.unset("spark.sql.adaptive.enabled")


# 7. a value path is read as that path ------------------------------------------------------------

@pytest.mark.parametrize("name", ["v[1].csv", "v*.csv", "v{1,2}.csv"])
def test_a_path_with_glob_characters_is_that_path(spark, vanilla, tables, tmp_path, name):
    (tmp_path / name).write_text("v\n1\n")
    (tmp_path / "v1.csv").write_text("v\n2\n")
    df = spark.createDataFrame([(1,), (2,)], "v int")
    # the reference: vanilla keeps the rows whose v is among the values of that one file, read here by Python
    # (Spark's own reader would take the name as a glob)
    reference = vanilla.createDataFrame([(1,), (2,)], "v int")
    included = sieve.include("v", str(tmp_path / name)).apply(df)
    assert [r.v for r in included.collect()] == [r.v for r in reference.where("v IN (1)").collect()] == [1]
    assert bulk_filter_lowered(included), logical_plans(included)
    text = tmp_path / name.replace(".csv", ".txt")
    text.write_text("2\n")
    included = sieve.include("v", str(text)).apply(df)
    assert [r.v for r in included.collect()] == [r.v for r in reference.where("v IN (2)").collect()] == [2]
    assert bulk_filter_lowered(included), logical_plans(included)


# bulk filters over nondeterministic inputs and values --------------------------------------------

@pytest.mark.parametrize("aqe", ["true", "false"])
def test_a_nondeterministic_input_or_value_source_is_read_once(spark, vanilla, tables, aqe):
    """A column made by rand() is computed once per row and the tree tests that value, as a Filter
    over it would: the joins sit above the projection that makes it, never below."""
    def inputs(session):  # rand(seed) over the same partitions gives the same values in either session
        return (session.range(0, 2000, 1, 2).selectExpr("id", "CAST(rand(7) * 10 AS INT) AS r", "id % 7 AS k"),
                session.range(0, 7, 1, 1).selectExpr("id AS v").where("rand(5) < 0.6"))

    df, values = inputs(spark)
    ints = lambda *v: spark.createDataFrame([(x,) for x in v], "v int")
    tree = (sieve.include("r", ints(1, 2)) | sieve.include("r", ints(3))) & sieve.exclude("k", values)
    for session in (spark, vanilla):
        session.conf.set("spark.sql.adaptive.enabled", aqe)
    try:
        plain, plain_values = inputs(vanilla)
        kept_k = [r.v for r in plain_values.collect()]
        expected = plain.where("r IN (1, 2, 3)").where(~plain.k.isin(kept_k))
        actual = tree.apply(df)
        assert Counter(actual.collect()) == Counter(expected.collect())
        plan = actual._jdf.queryExecution().optimizedPlan().toString()
        assert "Join" in plan and "BulkFilter" not in plan, "the tree runs on Catalyst's joins"
        assert bulk_filter_lowered(actual), logical_plans(actual)
    finally:
        for session in (spark, vanilla):
            session.conf.unset("spark.sql.adaptive.enabled")
