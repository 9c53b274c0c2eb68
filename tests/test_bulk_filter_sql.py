"""Bulk filters from SQL: ``sieve_bulk_filter(TABLE(t), '<tree JSON>' [, TABLE(source), ...])`` gives the rows
``tree.apply(df)`` gives (and plain Spark's EXISTS formulation in a session without the extension), as the same
one BulkFilter node; every
mistake is the same typed error, naming the argument or the JSON path of the bad node."""

import json

import pyspark
import pytest

import spark_sieve as sieve
from plans import bulk_filter_lowered, logical_plans
from reference import exists_query, same_rows
from test_bulk_filter import cars, files  # noqa: F401  (the module's fixtures: the cars table, value files)


def sql_filter(spark, tree_json, input_table="cars", sources=()):
    extra = "".join(f", TABLE({s})" for s in sources)
    return spark.sql(f"SELECT * FROM sieve_bulk_filter(TABLE({input_table}), :tree{extra})",
                     args={"tree": tree_json})


def check_sql(spark, vanilla, cars, tree):
    """The SQL function's rows equal tree.apply's and the EXISTS query's; one BulkFilter node, lowered."""
    cars.createOrReplaceTempView("cars")
    df = sql_filter(spark, tree.to_json())
    ok, diff = same_rows(df, tree.apply(cars))
    assert ok, f"differs from tree.apply (extra, missing): {diff}"
    ok, diff = same_rows(df, exists_query(vanilla, cars, tree))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    analyzed, optimized = logical_plans(df)
    assert analyzed.count("BulkFilter") == 1
    assert "BulkFilter" not in optimized
    return df


def test_leaves_and_nested_trees_as_tree_apply(spark, vanilla, cars, files):
    assert check_sql(spark, vanilla, cars, sieve.include("color", files["colors"])).count() == 9
    assert sorted(r.id for r in check_sql(spark, vanilla, cars, sieve.exclude("color", files["colors"])).collect()) == [1, 1, 4]
    check_sql(spark, vanilla, cars, sieve.any_of(
        sieve.include("region", files["regions"], format="parquet"),
        sieve.all_of(sieve.include("brand", files["brands"]),
                     sieve.any_of(sieve.exclude("color", files["few_colors"], value_column="color"),
                                  sieve.include("year", files["years"])))))
    check_sql(spark, vanilla, cars, sieve.include("brand", files["brands_orc"]) | sieve.exclude("region", files["region_dir"]))


def test_table_sources_and_a_query_as_input(spark, vanilla, cars):
    cars.createOrReplaceTempView("cars")
    spark.createDataFrame([("BMW",), ("Kia",)], "brand STRING").createOrReplaceTempView("brands_t")
    spark.createDataFrame([(2001,)], "y INT").createOrReplaceTempView("years_t")
    tree = {"op": "and", "children": [
        {"op": "include", "column": "brand", "source": {"dataframe": 0}},
        {"op": "exclude", "column": "year", "source": {"dataframe": 1}, "value_column": "y"}]}
    df = sql_filter(spark, json.dumps(tree), sources=("brands_t", "years_t"))
    expected = sieve.include("brand", spark.table("brands_t")) & sieve.exclude("year", spark.table("years_t"),
                                                                                value_column="y")
    ok, diff = same_rows(df, expected.apply(cars))
    assert ok, diff
    ok, diff = same_rows(df, exists_query(vanilla, cars, expected))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    assert sorted(r.id for r in df.collect()) == [4, 6, 6, 10]
    assert bulk_filter_lowered(df), logical_plans(df)
    # TABLE(<query>) as the input, and as a source
    df = sql_filter(spark, json.dumps(tree), input_table="SELECT * FROM cars WHERE year > 2001",
                    sources=("SELECT brand FROM brands_t", "years_t"))
    ok, diff = same_rows(df, exists_query(vanilla, cars.where("year > 2001"), expected))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    assert sorted(r.id for r in df.collect()) == [4, 10]
    assert bulk_filter_lowered(df), logical_plans(df)


def test_the_dataframe_api_reaches_it_through_spark_sql(spark, vanilla, cars, files):
    if sieve._connect.is_connect(spark) and pyspark.__version__.startswith("3."):
        pytest.skip("PySpark 3.5's Spark Connect spark.sql takes no DataFrame arguments")
    tree = sieve.include("color", files["colors"]) & sieve.exclude("brand", files["brands"])
    df = spark.sql("SELECT id FROM sieve_bulk_filter(TABLE({cars}), :tree)", args={"tree": tree.to_json()}, cars=cars)
    ok, diff = same_rows(df, tree.apply(cars).select("id"))
    assert ok, diff
    ok, diff = same_rows(df, exists_query(vanilla, cars, tree).select("id"))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    assert bulk_filter_lowered(df), logical_plans(df)


def test_errors_name_the_argument_or_the_json_path(spark, cars, files, tmp_path):
    cars.createOrReplaceTempView("cars")
    bad = {"op": "and", "children": [{"op": "include", "column": "color", "source": {"path": files["colors"]}},
                                     {"op": "or", "children": []}]}
    with pytest.raises(sieve.TreeError, match=r"filter tree at root.and\[1\]: empty OR"):
        sql_filter(spark, json.dumps(bad))
    with pytest.raises(sieve.TreeError, match="filter tree at root: not valid JSON"):
        sql_filter(spark, "{op: and")
    with pytest.raises(sieve.ColumnError, match="column 'colour': not a column of the input"):
        sql_filter(spark, sieve.include("colour", files["colors"]).to_json())
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(sieve.SourceError, match="no such file or directory"):
        sql_filter(spark, sieve.include("color", missing).to_json())
    frame = {"op": "include", "column": "brand", "source": {"dataframe": 1}}
    with pytest.raises(sieve.TreeError, match="source names TABLE source #1 but 0 were passed"):
        sql_filter(spark, json.dumps(frame))
    with pytest.raises(sieve.TreeError, match="sieve_bulk_filter argument 2: the tree's JSON must be a string literal"):
        spark.sql("SELECT * FROM sieve_bulk_filter(TABLE(cars), 42)")
    with pytest.raises(sieve.TreeError, match=r"sieve_bulk_filter argument 1: expected TABLE\(<table or query>\)"):
        spark.sql("SELECT * FROM sieve_bulk_filter('cars', '{}')")
    with pytest.raises(sieve.TreeError, match="takes TABLE\\(input\\), the tree's JSON"):
        spark.sql("SELECT * FROM sieve_bulk_filter(TABLE(cars))")
    if not pyspark.__version__.startswith("3."):  # (3.5's parser has no PARTITION BY after TABLE(...))
        with pytest.raises(sieve.TreeError, match="PARTITION BY / ORDER BY have no meaning here"):
            spark.sql("SELECT * FROM sieve_bulk_filter(TABLE(cars) WITH SINGLE PARTITION, :tree)",
                      args={"tree": sieve.include("color", files["colors"]).to_json()})
    # nothing else broke: the session still answers
    assert sql_filter(spark, sieve.include("color", files["colors"]).to_json()).count() == 9
