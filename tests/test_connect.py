"""Spark Connect: a local Connect server started by PySpark with spark_sieve.configure's settings (the jar, the
extension, the relation plugin). ``tree.apply`` on a Connect DataFrame gives the EXISTS formulation's rows as
one BulkFilter; explain, status, the SQL function and typed errors work without py4j; a dynamic filter fires
in a Connect query with answers equal to vanilla Spark's. The reference side is conftest's `vanilla`: a classic
session without the extension in the local Connect server's JVM, reading the same files or rows."""

import json

import pytest
from pyspark.errors import AnalysisException

import spark_sieve as sieve
from plans import bulk_filter_lowered, logical_plans
from reference import exists_query, same_rows
from test_bulk_filter import cars, files  # noqa: F401  (with `spark` below: the cars table and value files)


@pytest.fixture(scope="module")
def spark(connect):
    return connect


def check(vanilla, cars, tree):
    df = tree.apply(cars)
    assert sieve._connect.is_connect_dataframe(df)
    ok, diff = same_rows(df, exists_query(vanilla, cars, tree))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    assert "as written" in sieve.explain(df, print_it=False)   # the server's explain of the BulkFilter
    assert bulk_filter_lowered(df), logical_plans(df)
    return df


def test_bulk_filters_on_a_connect_dataframe(connect, vanilla, cars, files):
    assert check(vanilla, cars, sieve.include("color", files["colors"])).count() == 9
    assert sorted(r.id for r in check(vanilla, cars, sieve.exclude("color", files["colors"])).collect()) == [1, 1, 4]
    tree = sieve.any_of(sieve.include("region", files["regions"]),
                        sieve.all_of(sieve.include("brand", connect.createDataFrame([("BMW",), ("Kia",)], "b STRING")),
                                     sieve.exclude("year", files["years"])))
    df = check(vanilla, cars, tree)
    assert df.where("id = 6").count() == 2   # duplicate rows kept exactly
    # the result is an ordinary Connect DataFrame: columns resolve against it, it composes
    assert df.select(df["id"]).where(df["region"] == "ASIA").count() == 4   # ids 1, 1, 5, 7


def test_explain_and_status_without_py4j(connect, cars, files):
    df = sieve.include("color", files["colors"]).apply(cars)
    text = sieve.explain(df, print_it=False)
    assert "as written" in text and "include(color" in text, text
    status = sieve.status(connect)
    assert status["registered"] == "true"
    assert status["version"] == sieve.__version__
    assert "spark.sieve.bulkFilter.maxSetBytes" in status


def test_the_server_reads_json_trees(connect, vanilla, cars, files):
    tree = sieve.include("color", files["colors"]) & sieve.exclude("year", files["years"])
    again = sieve.BulkFilter.from_json(tree.to_json())
    assert again.to_json() == tree.to_json()
    check(vanilla, cars, again)
    with pytest.raises(sieve.TreeError, match=r"filter tree at root.and\[0\]: unknown op 'xor'"):
        sieve.BulkFilter.from_json('{"op": "and", "children": [{"op": "xor"}]}')


def test_sql_function_from_connect(connect, vanilla, cars, files):
    tree = sieve.include("color", files["colors"]) & sieve.exclude("year", files["years"])
    cars.createOrReplaceTempView("cars")   # (PySpark 3.5's Connect spark.sql takes no DataFrame arguments)
    df = connect.sql("SELECT * FROM sieve_bulk_filter(TABLE(cars), :tree)", args={"tree": tree.to_json()})
    ok, diff = same_rows(df, tree.apply(cars))
    assert ok, diff
    ok, diff = same_rows(df, exists_query(vanilla, cars, tree))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    assert bulk_filter_lowered(df), logical_plans(df)


def test_errors_are_typed_on_connect(connect, cars, files, tmp_path):
    with pytest.raises(sieve.TreeError, match=r"filter tree at root.and\[1\]: empty OR") as info:
        sieve.all_of(sieve.include("color", files["colors"]), sieve.any_of()).apply(cars)
    assert isinstance(info.value, AnalysisException)   # still PySpark's own class too
    assert getattr(info.value, "getCondition", info.value.getErrorClass)() == "SIEVE_TREE_INVALID"  # (3.5: no getCondition)
    with pytest.raises(sieve.ColumnError, match="column 'colour': not a column of the input"):
        sieve.include("colour", files["colors"]).apply(cars)
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(sieve.SourceError, match="no such file or directory"):
        sieve.include("color", missing).apply(cars)
    with pytest.raises(sieve.TreeError, match="unknown op 'xor'"):
        cars.createOrReplaceTempView("cars")
        connect.sql("SELECT * FROM sieve_bulk_filter(TABLE(cars), :tree)", args={"tree": json.dumps({"op": "xor"})}).schema
    connect.conf.set("spark.sieve.dynamicFilter.maxPassRatio", "2")
    try:
        with pytest.raises(sieve.ConfigError, match=r"maxPassRatio: 2.0 is outside \[0.0, 1.0\]"):
            connect.range(3).collect()
    finally:
        connect.conf.unset("spark.sieve.dynamicFilter.maxPassRatio")
    assert connect.range(3).count() == 3   # nothing else broke


def test_a_dynamic_filter_fires_in_a_connect_query(connect, vanilla, tmp_path):
    connect.range(30000).selectExpr("CAST(id % 1500 AS INT) AS k", "id AS v").write.parquet(str(tmp_path / "fact"))
    connect.range(1500).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat") \
        .write.parquet(str(tmp_path / "dim"))
    for session in (connect, vanilla):
        session.read.parquet(str(tmp_path / "fact")).createOrReplaceTempView("fact")
        session.read.parquet(str(tmp_path / "dim")).createOrReplaceTempView("dim")
    query = "SELECT f.k, f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7"
    # (every row tested: by default the broadcast join's filter is left out where the fact's footers show its
    # key spread over every row group, as here; tests/test_dynamic_filter.py does the same)
    connect.conf.set("spark.sieve.dynamicFilter.waitWeight", "0")
    connect.conf.set("spark.sieve.dynamicFilter.sameStageRowTest", "true")
    try:
        df = connect.sql(query)
        rows = df.collect()
        text = sieve.explain(df, print_it=False)
        assert "DynamicFilter [k#" in text, text
        expected = vanilla.sql(query).collect()
    finally:
        for key in ("waitWeight", "sameStageRowTest"):
            connect.conf.unset(f"spark.sieve.dynamicFilter.{key}")
    assert sorted(rows) == sorted(expected) and len(rows) == 300
