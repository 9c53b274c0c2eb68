"""The tables of the exactness suite (tests/exactness.py): per format, a fact table built through each path by which
a table format changes what a reader must see — renames and swaps, a column dropped and added again, type
promotion or widening, partition evolution, row-level deletes of each kind, checkpoints, statistics off or
limited, snapshots, tags, branches and incremental reads. Each table has the key column `k` (the join key:
whatever column that name reads in the snapshot read), `v` (a BIGINT) and `j`; each builder returns its reads:
(label, the relation a query names) — a current read, and the older snapshots, versions, tags, branches and
incremental windows that read other files or another schema. Written in the spark-sieve session."""

ROWS = 20000
KEYS = 10000  # k in [0, KEYS): each key twice in a table's first write

# tables a format's release cannot build, with its reason ({"format name": reason}): printed with the suite's tally
NOT_BUILT = {}


def _rows(spark, rows=ROWS, offset=0, k=f"CAST((id * 7919) % {KEYS} AS INT)"):
    """`rows` rows (k, j, v): k spread over [0, KEYS) as `k` says, j another column of keys (KEYS - 1 - k), v unique."""
    return spark.range(offset, offset + rows).selectExpr(f"{k} AS k", f"CAST({KEYS - 1} - ({k}) AS INT) AS j",
                                                         "id AS v")


def _sorted(df, files=8):
    """`df` in `files` files of contiguous key ranges, sorted within each."""
    return df.repartitionByRange(files, "k").sortWithinPartitions("k")


# schema changes after a first write: the statements, then the columns of the rows written after them
# swapped: k and j swapped by two renames (the old k's field id or physical name is today's k_old; today's k
# the old j); readded: k dropped and added again (a new field, NULL in the older files)
EVOLUTIONS = {"swapped": (("RENAME COLUMN k TO k_old", "RENAME COLUMN j TO k"), ("j AS k_old", "k", "v")),
              "readded": (("DROP COLUMN k", "ADD COLUMN k INT"), ("j", "v", "k"))}


def _evolve(spark, table, evolution, append):
    """`table` changed by EVOLUTIONS[`evolution`], then rows appended (`append(df)`)."""
    statements, columns = EVOLUTIONS[evolution]
    for statement in statements:
        spark.sql(f"ALTER TABLE {table} {statement}")
    append(_sorted(_rows(spark, 4000, ROWS)).selectExpr(*columns))


# ------------------------------------------------------------------------------------------------ Iceberg

def _ice(spark, name, columns="k INT, j INT, v BIGINT", extra="", props="", version=2):
    table = f"ice.exact.{name}"
    spark.sql(f"CREATE TABLE {table} ({columns}) USING iceberg {extra} TBLPROPERTIES "
              f"('format-version' = '{version}', 'write.distribution-mode' = 'none'{props})")
    return table


def _snapshots(spark, table):
    return [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at").collect()]


def iceberg_tables(spark):
    """{name: [(label, relation), ...]} of the Iceberg tables, in catalog `ice` (namespace `exact`)."""
    import table_formats

    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.exact")
    tables = {}

    t = _ice(spark, "clustered")
    _sorted(_rows(spark)).writeTo(t).append()
    tables["clustered"] = [("current", t)]

    t = _ice(spark, "scattered")
    _rows(spark).repartition(4).writeTo(t).append()
    tables["scattered"] = [("current", t)]

    # each schema evolution: the snapshot (and a tag) before it read the old k by its field id
    for evolution in EVOLUTIONS:
        t = _ice(spark, evolution)
        _sorted(_rows(spark)).writeTo(t).append()
        spark.sql(f"ALTER TABLE {t} CREATE TAG before")
        _evolve(spark, t, evolution, lambda df, t=t: df.writeTo(t).append())
        first = _snapshots(spark, t)[0]
        tables[evolution] = [("current", t), ("snapshot", f"{t} VERSION AS OF {first}"),
                             ("tag", f"{t} VERSION AS OF 'before'")]

    # k promoted from INT to BIGINT, then keys beyond INT's range written
    t = _ice(spark, "promoted")
    _sorted(_rows(spark)).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN k TYPE BIGINT")
    _rows(spark, 2000, ROWS).selectExpr("CAST(k AS BIGINT) + 4294967296 AS k", "j", "v").writeTo(t).append()
    first = _snapshots(spark, t)[0]
    tables["promoted"] = [("current", t), ("snapshot", f"{t} VERSION AS OF {first}")]

    # partitioned by bucket(4, k), then by truncate(1000, k) (two specs, k the source of both)
    t = _ice(spark, "repartitioned", extra="PARTITIONED BY (bucket(4, k))")
    _rows(spark).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} REPLACE PARTITION FIELD k_bucket WITH truncate(1000, k)")
    _rows(spark, 4000, ROWS).writeTo(t).append()
    tables["repartitioned"] = [("current", t)]

    # k the source of a partition field (bucket(4, k)), then k and j swapped: a tag read before the swap filters
    # its partitions by the old k's field id, which today's schema names k_old
    t = _ice(spark, "partition_swapped", extra="PARTITIONED BY (bucket(4, k))")
    _rows(spark).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} CREATE TAG before")
    _evolve(spark, t, "swapped", lambda df, t=t: df.writeTo(t).append())
    tables["partition_swapped"] = [("current", t), ("tag", f"{t} VERSION AS OF 'before'")]

    # a data column's key beside a partition of another column (days of `day`) that evolves
    t = _ice(spark, "by_day", columns="k INT, j INT, v BIGINT, day DATE", extra="PARTITIONED BY (days(day))")
    days = "DATE'2024-01-01' + CAST(v % 4 AS INT) AS day"
    _sorted(_rows(spark)).selectExpr("k", "j", "v", days).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(2, j)")
    _sorted(_rows(spark, 4000, ROWS)).selectExpr("k", "j", "v", days).writeTo(t).append()
    tables["by_day"] = [("current", t)]

    # position deletes (merge-on-read): the snapshot before them and after
    t = _ice(spark, "position_deleted", props=", 'write.delete.mode' = 'merge-on-read'")
    _sorted(_rows(spark)).writeTo(t).append()
    spark.sql(f"DELETE FROM {t} WHERE v % 7 = 0 OR k BETWEEN 1000 AND 1500")
    first = _snapshots(spark, t)[0]
    tables["position_deleted"] = [("current", t), ("snapshot", f"{t} VERSION AS OF {first}")]

    # format v1, and v3 with position deletes as deletion vectors (where the release writes v3)
    t = _ice(spark, "v1", version=1)
    _sorted(_rows(spark)).writeTo(t).append()
    tables["v1"] = [("current", t)]
    try:
        t = _ice(spark, "v3_deleted", props=", 'write.delete.mode' = 'merge-on-read'", version=3)
        _sorted(_rows(spark)).writeTo(t).append()
        spark.sql(f"DELETE FROM {t} WHERE v % 7 = 0 OR k BETWEEN 1000 AND 1500")
    except Exception as e:  # noqa: BLE001 (the release's own error, reported as the reason)
        NOT_BUILT["iceberg v3_deleted"] = str(e).splitlines()[0][:200]
    else:
        tables["v3_deleted"] = [("current", t), ("snapshot", f"{t} VERSION AS OF {_snapshots(spark, t)[0]}")]

    # equality deletes of keys at the files' edges and inside them (through Iceberg's Java API)
    t = _ice(spark, "equality_deleted")
    _sorted(_rows(spark)).writeTo(t).append()
    table_formats.equality_deletes(spark, t, "k", [0, 1, 1249, 1250, 5000, 9999])
    tables["equality_deleted"] = [("current", t)]

    # no column bounds in the manifests (counts only), and none at all
    for name, mode in (("counts_only", "counts"), ("no_metrics", "none")):
        t = _ice(spark, name, props=f", 'write.metadata.metrics.default' = '{mode}'")
        _sorted(_rows(spark)).writeTo(t).append()
        tables[name] = [("current", t)]

    # a branch written apart from main, and main written after it
    t = _ice(spark, "branched")
    _sorted(_rows(spark)).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH side")
    _sorted(_rows(spark, 4000, ROWS)).selectExpr("k + 20000 AS k", "j", "v").writeTo(f"{t}.branch_side").append()
    spark.sql(f"DELETE FROM {t} WHERE k < 2000")
    tables["branched"] = [("current", t), ("branch", f"{t} VERSION AS OF 'side'")]

    # an incremental read: the appends after the first snapshot only
    t = _ice(spark, "appended")
    _sorted(_rows(spark)).writeTo(t).append()
    _sorted(_rows(spark, 4000, ROWS, k=f"CAST(id % {KEYS} AS INT)")).writeTo(t).append()
    _sorted(_rows(spark, 4000, ROWS + 4000, k=f"CAST(id % 3000 AS INT)")).writeTo(t).append()
    first, _, last = _snapshots(spark, t)
    tables["appended"] = [("current", t),
                          ("incremental", {"format": "iceberg", "path": t,
                                           "options": {"start-snapshot-id": str(first), "end-snapshot-id": str(last)}})]
    return tables


# ------------------------------------------------------------------------------------------------ Delta

def _delta(spark, root, name, props=""):
    path = f"{root}/{name}"
    spark.sql(f"CREATE TABLE delta.`{path}` (k INT, j INT, v BIGINT) USING delta"
              + (f" TBLPROPERTIES ({props})" if props else ""))
    return path, f"delta.`{path}`"


MAPPING = ("'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5'")


def delta_tables(spark, root):
    """{name: [(label, relation), ...]} of the Delta tables, path tables under `root`."""
    tables = {}

    path, t = _delta(spark, root, "clustered")
    _sorted(_rows(spark)).write.format("delta").mode("append").save(path)
    tables["clustered"] = [("current", t)]

    path, t = _delta(spark, root, "scattered")
    _rows(spark).repartition(4).write.format("delta").mode("append").save(path)
    tables["scattered"] = [("current", t)]

    # each schema evolution under column mapping (physical names): version 1 reads the old k
    for evolution in EVOLUTIONS:
        path, t = _delta(spark, root, evolution, MAPPING)
        _sorted(_rows(spark)).write.format("delta").mode("append").save(path)
        _evolve(spark, t, evolution, lambda df, path=path: df.write.format("delta").mode("append").save(path))
        tables[evolution] = [("current", t), ("version", f"{t} VERSION AS OF 1")]

    # deletion vectors, the version before the delete and after
    path, t = _delta(spark, root, "deletion_vectors", "'delta.enableDeletionVectors' = 'true'")
    _sorted(_rows(spark)).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM {t} WHERE v % 7 = 0 OR k BETWEEN 1000 AND 1500")
    tables["deletion_vectors"] = [("current", t), ("version", f"{t} VERSION AS OF 1")]

    # a checkpoint every 2 commits over 5 appends of other key ranges and a delete; an older version read
    path, t = _delta(spark, root, "checkpointed", "'delta.checkpointInterval' = '2'")
    for i in range(5):
        _sorted(_rows(spark, 2000, i * 2000, k=f"CAST(id % 2000 + {i * 2000} AS INT)"), 2) \
            .write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM {t} WHERE k % 10 = 3")
    tables["checkpointed"] = [("current", t), ("version", f"{t} VERSION AS OF 3")]

    # no statistics at all, and statistics of v only
    for name, props in (("no_stats", "'delta.dataSkippingNumIndexedCols' = '0'"),
                        ("stats_of_v", "'delta.dataSkippingStatsColumns' = 'v'")):
        path, t = _delta(spark, root, name, props)
        _sorted(_rows(spark)).write.format("delta").mode("append").save(path)
        tables[name] = [("current", t)]

    # k widened from INT to BIGINT (type widening), then keys beyond INT's range written; where the release widens
    # no INT, the table is named among those not built
    path, t = _delta(spark, root, "widened", "'delta.enableTypeWidening' = 'true'")
    _sorted(_rows(spark)).write.format("delta").mode("append").save(path)
    try:
        spark.sql(f"ALTER TABLE {t} CHANGE COLUMN k TYPE BIGINT")
    except Exception as e:  # noqa: BLE001 (the release's own error, reported as the reason)
        NOT_BUILT["delta widened"] = str(e).splitlines()[0][:200]
    else:
        _rows(spark, 2000, ROWS).selectExpr("CAST(k AS BIGINT) + 4294967296 AS k", "j", "v") \
            .write.format("delta").mode("append").save(path)
        tables["widened"] = [("current", t), ("version", f"{t} VERSION AS OF 1")]

    # partitioned by j's band: k a data column beside the partitions
    path = f"{root}/partitioned"
    _sorted(_rows(spark)).selectExpr("k", "v", "CAST(j DIV 2500 AS INT) AS j").write.format("delta") \
        .partitionBy("j").save(path)
    tables["partitioned"] = [("current", f"delta.`{path}`")]
    return tables


# ------------------------------------------------------------------------------------------------ Parquet

def parquet_tables(spark, root):
    """{name: [(label, relation), ...]} of plain Parquet directories under `root` (footers, not a table's log)."""
    tables = {}
    for name, df in (("clustered", _sorted(_rows(spark))), ("scattered", _rows(spark).repartition(4))):
        df.write.parquet(f"{root}/{name}")
        tables[name] = [("current", f"parquet.`{root}/{name}`")]
    _sorted(_rows(spark)).selectExpr("k", "v", "CAST(j DIV 2500 AS INT) AS band").write.partitionBy("band") \
        .parquet(f"{root}/partitioned")
    tables["partitioned"] = [("current", f"parquet.`{root}/partitioned`")]
    # files with k and files without it (NULL there once the schemas are merged)
    _sorted(_rows(spark), 4).write.parquet(f"{root}/merged/src=a")
    _sorted(_rows(spark, 4000, ROWS), 2).selectExpr("j", "v").write.parquet(f"{root}/merged/src=b")
    tables["merged"] = [("current", {"format": "parquet", "path": f"{root}/merged",
                                     "options": {"mergeSchema": "true"}})]
    return tables
