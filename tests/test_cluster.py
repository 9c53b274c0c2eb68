"""spark-sieve on a real standalone cluster: the jar ships through spark.jars to executors that run in
their own JVMs, and queries run there with the extension on."""

import spark_sieve as sieve


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
            .selectExpr("reflect('sieve.BuildInfo', 'version') AS v", "id % 10 AS k")
            .groupBy("v", "k").count().collect())
    assert {r.v for r in rows} == {sieve.__version__}
    assert sorted(r.k for r in rows) == list(range(10))
    assert sum(r["count"] for r in rows) == 1000


def test_bulk_filter_reads_value_files_on_executors(cluster_spark, tmp_path):
    values = tmp_path / "keys.txt"
    values.write_text("".join(f"{k}\n" for k in range(0, 1000, 7)))
    df = cluster_spark.range(0, 20000, numPartitions=8).selectExpr("id % 1000 AS k", "id")
    tree = sieve.include("k", str(values)) | sieve.exclude("id", str(values))
    got = tree.apply(df).count()
    expected = df.where(f"k % 7 = 0 OR NOT (id < 1000 AND id % 7 = 0)").count()
    assert got == expected
