"""Spark 4's ``spark.api.mode=connect``: a builder with a master and that setting gets a Spark Connect session
on a local server that PySpark starts with the builder's settings. spark_sieve.configure's jar, extension and
relation plugin reach that server as they do from ``.remote("local")``: bulk filters, explain, status, typed
errors and dynamic filters work on it."""

import pytest

import spark_sieve as sieve
from reference import exists_query, same_rows
from spark_line import LINE
from test_bulk_filter import cars, files  # noqa: F401  (with `spark` below: the cars table and value files)

pytestmark = pytest.mark.skipif(LINE < (4, 0), reason="Spark 3.5 has no spark.api.mode (arrived in 4.0)")


@pytest.fixture(scope="module")
def spark(api_mode_connect):
    return api_mode_connect


def test_bulk_filters_in_api_mode_connect(spark, cars, files):
    tree = sieve.include("color", files["colors"]) & sieve.exclude("year", files["years"])
    df = tree.apply(cars)
    assert sieve._connect.is_connect_dataframe(df)
    ok, diff = same_rows(df, exists_query(spark, cars, tree))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    assert "as written" in sieve.explain(df, print_it=False)
    assert sieve.status(spark)["registered"] == "true"
    with pytest.raises(sieve.ColumnError, match="column 'colour': not a column of the input"):
        sieve.include("colour", files["colors"]).apply(cars)


def test_a_dynamic_filter_fires_in_api_mode_connect(spark, tmp_path):
    spark.range(30000).selectExpr("CAST(id % 1500 AS INT) AS k", "id AS v").write.parquet(str(tmp_path / "fact"))
    spark.range(1500).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat") \
        .write.parquet(str(tmp_path / "dim"))
    fact, dim = spark.read.parquet(str(tmp_path / "fact")), spark.read.parquet(str(tmp_path / "dim"))
    spark.conf.set("spark.sieve.dynamicFilter.minApplicationBytes", "0")
    spark.conf.set("spark.sieve.dynamicFilter.sameStageRowTest", "true")
    try:
        df = fact.join(dim.where("cat = 7"), "k").select("k", "v")
        rows = df.collect()
        assert "DynamicFilter [k#" in sieve.explain(df, print_it=False)
        spark.conf.set("spark.sieve.enabled", "false")
        expected = fact.join(dim.where("cat = 7"), "k").select("k", "v").collect()
    finally:
        for key in ("dynamicFilter.minApplicationBytes", "dynamicFilter.sameStageRowTest", "enabled"):
            spark.conf.unset(f"spark.sieve.{key}")
    assert sorted(rows) == sorted(expected) and len(rows) == 300
