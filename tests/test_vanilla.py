"""The reference side of the answer tests is vanilla Spark: conftest's `vanilla` session, in the JVM of the
module's spark-sieve session, holds none of spark-sieve's rules, and a query that gets a dynamic filter in the
spark-sieve session gets none there (the same files read by both)."""

import pytest

import spark_sieve as sieve
from plans import dynamic_filters
from vanilla_session import sieve_rules

STAR = "SELECT f.k, f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.cat = 7"
FORCE = {"spark.sieve.dynamicFilter.waitWeight": "0", "spark.sieve.dynamicFilter.sameStageRowTest": "true"}


@pytest.fixture(scope="module")
def star(spark, vanilla, tmp_path_factory):
    d = tmp_path_factory.mktemp("vanilla_star")
    spark.range(30000).selectExpr("CAST(id % 1500 AS INT) AS k", "id AS v").write.parquet(str(d / "fact"))
    spark.range(1500).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat").write.parquet(str(d / "dim"))
    for session in (spark, vanilla):
        for name in ("fact", "dim"):
            session.read.parquet(str(d / name)).createOrReplaceTempView(name)
    for key, value in FORCE.items():
        spark.conf.set(key, value)
    yield d
    for key in FORCE:
        spark.conf.unset(key)


def test_the_vanilla_session_has_no_sieve_rule(spark, vanilla):
    assert sieve_rules(spark), "spark-sieve's session should hold its rules (else this check proves nothing)"
    assert sieve_rules(vanilla) == []
    assert vanilla._jsparkSession.sparkContext() == spark._jsparkSession.sparkContext()   # one JVM, one context
    # not even the master switch's reading of the context's spark.sql.extensions: the extension is not there
    assert "sieve" not in vanilla._jsparkSession.sessionState().sqlParser().getClass().getName()


def test_a_query_with_a_dynamic_filter_in_sieve_has_none_in_vanilla(spark, vanilla, star):
    ours, theirs = spark.sql(STAR), vanilla.sql(STAR)
    assert sorted(ours.collect()) == sorted(theirs.collect()) and len(theirs.collect()) == 300
    assert dynamic_filters(ours), "spark-sieve's session should place a dynamic filter on this star join"
    assert "DynamicFilter [k#" in sieve.explain(ours, print_it=False)
    assert dynamic_filters(theirs) == []
    assert "DynamicFilter" not in theirs._jdf.queryExecution().executedPlan().toString()


def test_vanilla_knows_no_bulk_filter(spark, vanilla, star):
    from pyspark.errors import AnalysisException

    tree = '{"op": "include", "column": "k", "source": {"dataframe": 0}}'
    assert spark.sql("SELECT * FROM sieve_bulk_filter(TABLE(fact), :t, TABLE(dim))", args={"t": tree}).count() > 0
    with pytest.raises(AnalysisException, match="sieve_bulk_filter"):
        vanilla.sql("SELECT * FROM sieve_bulk_filter(TABLE(fact), :t, TABLE(dim))", args={"t": tree}).count()
