"""spark-sieve on a real standalone cluster: the jar ships through spark.jars to executors that run in
their own JVMs, and queries run there with the extension on, with vanilla Spark's answers (a session without
the extension on the same cluster, conftest's `cluster_vanilla`)."""

import spark_sieve as sieve
from plans import bulk_filter_lowered, dynamic_filters, logical_plans


def test_cluster_has_two_workers_in_their_own_jvms(standalone_cluster):
    state = standalone_cluster.master_state()
    assert state["aliveworkers"] == 2
    assert len({w["id"] for w in state["workers"]}) == 2


def test_extension_is_on_and_the_jar_runs_on_executors(cluster_spark):
    assert sieve.status(cluster_spark)["registered"] == "true"
    executors = cluster_spark.sparkContext._jsc.sc().getExecutorIds()
    assert executors.size() == 2, "expected one executor per worker"
    # reflect() calls a static method of our jar inside each task: it fails if the jar is not shipped
    rows = (cluster_spark.range(0, 1000, numPartitions=8)
            .selectExpr("reflect('sieve.config.BuildInfo', 'version') AS v", "id % 10 AS k")
            .groupBy("v", "k").count().collect())
    assert {r.v for r in rows} == {sieve.__version__}
    assert sorted(r.k for r in rows) == list(range(10))
    assert sum(r["count"] for r in rows) == 1000


def test_bulk_filter_reads_value_files_on_executors(cluster_spark, cluster_vanilla, tmp_path):
    values = tmp_path / "keys.txt"
    values.write_text("".join(f"{k}\n" for k in range(0, 1000, 7)))
    df = cluster_spark.range(0, 20000, numPartitions=8).selectExpr("id % 1000 AS k", "id")
    tree = sieve.include("k", str(values)) | sieve.exclude("id", str(values))
    filtered = tree.apply(df)
    got = filtered.count()
    plain = cluster_vanilla.range(0, 20000, numPartitions=8).selectExpr("id % 1000 AS k", "id")
    expected = plain.where(f"k % 7 = 0 OR NOT (id < 1000 AND id % 7 = 0)").count()
    assert got == expected
    assert bulk_filter_lowered(filtered), logical_plans(filtered)


def test_dynamic_filters_of_each_kind_run_on_executors(cluster_spark, cluster_vanilla, tmp_path):
    """An IN-set, a bitmap and a bloom filter each travel to executors in other JVMs (serialized, their
    per-row tests rebuilt there) and give vanilla's answer."""
    fact, dim = str(tmp_path / "fact"), str(tmp_path / "dim")
    cluster_spark.range(0, 60000, numPartitions=6).selectExpr(
        "CAST(id % 3000 AS INT) AS k", "id AS v").write.parquet(fact)
    # keys 0..2999: `cat < 50` keeps 1,500 keys dense in [0, 2949] (a bitmap once they overflow the
    # IN-set), `cat = 7` 30 keys 100 apart (too sparse for a bitmap: a bloom filter)
    cluster_spark.range(0, 3000, numPartitions=2).selectExpr(
        "CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat").write.parquet(dim)
    for session in (cluster_spark, cluster_vanilla):
        session.read.parquet(fact).createOrReplaceTempView("c_fact")
        session.read.parquet(dim).createOrReplaceTempView("c_dim")
    cases = [("in-set", "cat = 7", {}),
             ("bitmap", "cat < 50", {"spark.sieve.dynamicFilter.maxInSetSize": "10"}),
             ("bloom filter", "cat = 7", {"spark.sieve.dynamicFilter.maxInSetSize": "10"})]
    base = {"spark.sieve.dynamicFilter.waitWeight": "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    try:
        for kind, where, extra in cases:
            for k, v in {**base, **extra}.items():
                cluster_spark.conf.set(k, v)
            sql = f"SELECT f.k, sum(f.v) AS s FROM c_fact f JOIN c_dim d ON f.k = d.k WHERE d.{where} GROUP BY f.k"
            cluster_vanilla.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
            expected = sorted(cluster_vanilla.sql(sql).collect())
            df = cluster_spark.sql(sql)
            assert sorted(df.collect()) == expected, kind
            text = sieve.explain(df, print_it=False)
            assert f"filter:  {kind}" in text, text
            assert dynamic_filters(df), kind
            for k in extra:
                cluster_spark.conf.unset(k)
    finally:
        for k in list(base) + ["spark.sieve.dynamicFilter.maxInSetSize"]:
            cluster_spark.conf.unset(k)
        cluster_vanilla.conf.unset("spark.sql.autoBroadcastJoinThreshold")
