"""Dynamic filters on tables in Delta Lake and Apache Iceberg (the line's releases: table_formats). Each case
runs a star join on a fact table in a format, in spark-sieve's session and in vanilla Spark's (the formats'
extensions only), compares the answers and asserts the plan: a DynamicFilter on the fact's scan, or the
decline that keeps Spark's own pruning. The tables do what the formats do to a reader: Delta's deletion
vectors, column mapping (physical names other than the logical ones) and time travel; Iceberg's position
and equality deletes, renamed and re-added columns, partition evolution, hidden partitioning and time travel;
a source's own runtime filtering."""

import re
from collections import Counter

import pytest

import table_formats
from plans import declined_joins, dynamic_filters, joins, metric, named
from vanilla_session import settings_on

pytestmark = pytest.mark.skipif(not table_formats.formats(), reason=f"neither Delta nor Iceberg has a release for "
                                f"Spark {table_formats.LINE_NAME} on Maven Central")

DIM_KEYS = 1500
FACT_ROWS = 30000


def star(fact, key="k"):
    """A star join keeping 1% of the fact's keys (15 of 1,500)."""
    return f"SELECT f.{key}, f.v FROM {fact} f JOIN dim d ON f.{key} = d.k WHERE d.cat = 7"


SETTINGS = {"broadcast": {"spark.sql.autoBroadcastJoinThreshold": "10485760"},
            "sort-merge": {"spark.sql.autoBroadcastJoinThreshold": "-1",
                           "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}}
CASES = [(join, aqe) for join in SETTINGS for aqe in ("true", "false")]
# each join with AQE on one and off on the other: the cases beyond the plain star joins (Delta is slow to read)
TWO_CASES = [("sort-merge", "true"), ("broadcast", "false")]


def _run(session, query, settings):
    with settings_on(session, settings):
        df = session.sql(query)
        return df, df.collect()


def same_answer(spark, vanilla, query, join="sort-merge", aqe="true", rows_expected=True):
    """spark-sieve's DataFrame of `query` (after checking its rows equal vanilla's, and, with `rows_expected`, that
    there are some: without, for a query whose right answer may be no row or a count of 0)."""
    settings = {**SETTINGS[join], "spark.sql.adaptive.enabled": aqe}
    _, expected = _run(vanilla, query, settings)
    # every row tested (a broadcast join's filter is otherwise left out where the fact's keys are spread
    # over every row group, as here); no scan too small for a filter
    df, actual = _run(spark, query, {**settings, "spark.sieve.dynamicFilter.sameStageRowTest": "true",
                                     "spark.sieve.dynamicFilter.waitWeight": "0"})
    assert expected or not rows_expected, f"no rows: the case tests nothing ({query})"
    assert Counter(map(tuple, actual)) == Counter(map(tuple, expected)), query
    return df


def filtered(df):
    """The fact scan got a dynamic filter (or explain's reasons, for the assertion's message)."""
    from spark_sieve import explain
    return bool(dynamic_filters(df)), explain(df, print_it=False)


@pytest.fixture(scope="module")
def dim(formats_spark, formats_vanilla, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("dim") / "dim")
    formats_spark.range(DIM_KEYS).selectExpr("CAST(id AS INT) AS k", "CAST(id % 100 AS INT) AS cat",
                                             "CAST(id DIV 100 AS INT) AS band") \
        .write.parquet(path)
    for session in (formats_spark, formats_vanilla):
        session.read.parquet(path).createOrReplaceTempView("dim")
    return path


def _fact(spark):
    return spark.range(FACT_ROWS).selectExpr(f"CAST(id % {DIM_KEYS} AS INT) AS k", "id AS v",
                                             "DATE'2024-01-01' + CAST(id % 40 AS INT) AS day").repartition(4)


# ------------------------------------------------------------------------------------------------ Delta

@pytest.fixture(scope="module")
def delta(formats_spark, dim, tmp_path_factory):
    """Path tables: `plain`; `dv`, rows deleted through deletion vectors (version 1 before the delete);
    `mapped`, column mapping by name turned on, k renamed to key, a new column named k added, rows written;
    `clustered`, 8 files of key ranges."""
    table_formats.require("delta")
    spark, root = formats_spark, tmp_path_factory.mktemp("delta")
    paths = {name: str(root / name) for name in ("plain", "dv", "mapped", "clustered")}
    _fact(spark).write.format("delta").save(paths["plain"])
    _fact(spark).repartitionByRange(8, "k").sortWithinPartitions("k").write.format("delta").save(paths["clustered"])
    spark.sql(f"CREATE TABLE delta.`{paths['dv']}` (k INT, v BIGINT, day DATE) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    _fact(spark).write.format("delta").mode("append").save(paths["dv"])
    spark.sql(f"DELETE FROM delta.`{paths['dv']}` WHERE v % 7 = 0")
    # mapping turned on after the first files: their column k keeps the physical name k, which the new k
    # (another column) must not be read by
    _fact(spark).write.format("delta").save(paths["mapped"])
    spark.sql(f"ALTER TABLE delta.`{paths['mapped']}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
              "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')")
    spark.sql(f"ALTER TABLE delta.`{paths['mapped']}` RENAME COLUMN k TO key")
    spark.sql(f"ALTER TABLE delta.`{paths['mapped']}` ADD COLUMN k INT")
    _fact(spark).selectExpr("k AS key", "v + 100000 AS v", "day", f"(k + 7) % {DIM_KEYS} AS k") \
        .write.format("delta").mode("append").save(paths["mapped"])
    return {name: f"delta.`{path}`" for name, path in paths.items()}


@pytest.mark.parametrize("join, aqe", CASES)
def test_delta_star_join(formats_spark, formats_vanilla, delta, join, aqe):
    df = same_answer(formats_spark, formats_vanilla, star(delta["plain"]), join, aqe)
    placed, why = filtered(df)
    assert placed, why


@pytest.mark.parametrize("join, aqe", TWO_CASES)
def test_delta_deletion_vectors(formats_spark, formats_vanilla, delta, join, aqe):
    metrics = formats_spark.sql(f"DESCRIBE HISTORY {delta['dv']}").where("operation = 'DELETE'") \
        .first()["operationMetrics"]
    assert int(metrics["numDeletionVectorsAdded"]) > 0, metrics
    df = same_answer(formats_spark, formats_vanilla, star(delta["dv"]), join, aqe)
    placed, why = filtered(df)
    assert placed, why


def test_delta_column_mapping(formats_spark, formats_vanilla, delta):
    """The files name columns by their physical names, and the first files' `k` is the column now named key:
    a join on either keeps its own rows (the first files hold no new k: NULL there)."""
    for key, (join, aqe) in zip(("key", "k"), TWO_CASES):
        df = same_answer(formats_spark, formats_vanilla, star(delta["mapped"], key=key), join, aqe)
        placed, why = filtered(df)
        assert placed, why


def skipped_by_table_stats(spark, vanilla, table, source, join, aqe):
    """Keys 300..399 lie in one or two of `table`'s 8 files: `source` (the table's own statistics) skips the
    others, no footer read. The plan's scan reports the rows its pruned copy read (the UI's figures)."""
    query = f"SELECT f.k, f.v FROM {table} f JOIN dim d ON f.k = d.k WHERE d.band = 3"
    df = same_answer(spark, vanilla, query, join, aqe)
    placed, why = filtered(df)
    skipped = re.search(rf"statistics of 8 files read from {source} \(no footer\): (\d+) files skipped", why)
    assert placed and skipped and int(skipped.group(1)) >= 6, why
    assert "footers of" not in why, why
    scans = named(df, "BatchScanExec") + named(df, "FileSourceScanExec")
    read = [metric(s, "numOutputRows") for s in scans if "clustered" in s.toString()]
    assert read and all(r and r > 0 for r in read), (read, why)


@pytest.mark.parametrize("join, aqe", TWO_CASES)
def test_delta_clustered_files_skipped_by_the_log(formats_spark, formats_vanilla, delta, join, aqe):
    skipped_by_table_stats(formats_spark, formats_vanilla, delta["clustered"], "the Delta log", join, aqe)


@pytest.mark.parametrize("join, aqe", TWO_CASES)
def test_delta_two_filters_on_one_scan_are_tested_together(formats_spark, formats_vanilla, delta, join, aqe):
    """Two dynamic filters on one Delta scan's k (keys 300..399 from one dimension, 0..799 from another): each file's
    bounds in the log are tested against both filters' keys in one pass, and the files of no k in 300..399 are
    skipped."""
    query = (f"SELECT f.k, f.v FROM {delta['clustered']} f JOIN dim d ON f.k = d.k JOIN dim d2 ON f.k = d2.k "
             "WHERE d.band = 3 AND d2.band < 8")
    df = same_answer(formats_spark, formats_vanilla, query, join, aqe)
    placed, why = filtered(df)
    listed = re.findall(r"statistics of 8 files read from the Delta log \(one listing for (\d+) filters\) "
                        r"\(no footer\): (\d+) files skipped", why)
    assert placed and len(listed) == 2 and all(n == "2" and int(skipped) >= 6 for n, skipped in listed), why


@pytest.mark.parametrize("join, aqe", TWO_CASES)
def test_delta_keys_in_every_file_are_not_pushed(formats_spark, formats_vanilla, delta, join, aqe):
    """A filter whose keys the log's bounds put in every file (v, spread over the files clustered by k) is pushed
    nowhere: no key range in the readers, no listing; the other filter on the scan (k) still skips files."""
    query = (f"SELECT f.k, f.v FROM {delta['clustered']} f JOIN dim d ON f.k = d.k JOIN dim d2 ON f.v = d2.k "
             "WHERE d.band = 3 AND d2.cat < 50")
    df = same_answer(formats_spark, formats_vanilla, query, join, aqe)
    placed, why = filtered(df)
    assert placed and "the Delta log's statistics put a key in each of the 8 files they bound" in why, why
    skipped = re.search(r"statistics of 8 files read from the Delta log \(no footer\): (\d+) files skipped", why)
    assert skipped and int(skipped.group(1)) >= 6, why
    assert "(v >= " not in why and "v in " not in why, why


def test_delta_small_scan_is_not_pruned(formats_spark, formats_vanilla, delta):
    """A Delta scan reading less than reading its log's file statistics costs (a Spark job: stageStartBytes x
    waitWeight) keeps Delta's own listing: its rows are tested, no key range is pushed (TPC-DS q1 at sf1:
    store_returns' 3.4 MB in 2 files, none skipped; a listing of the log for the keys took ~0.3 s of 0.9 s)."""
    query = f"SELECT f.k, f.v FROM {delta['clustered']} f JOIN dim d ON f.k = d.k WHERE d.band = 3"
    settings = {**SETTINGS["broadcast"], "spark.sieve.dynamicFilter.sameStageRowTest": "true"}
    _, expected = _run(formats_vanilla, query, settings)
    df, actual = _run(formats_spark, query, settings)
    assert expected and Counter(map(tuple, actual)) == Counter(map(tuple, expected))
    placed, why = filtered(df)
    assert placed and "less than reading the Delta log's file statistics (a Spark job) costs" in why, why
    assert "pushed to scan" not in why and "files read from the Delta log" not in why, why


def test_delta_time_travel(formats_spark, formats_vanilla, delta):
    """Version 1 (before the delete) and the latest answer differently; each equals vanilla's."""
    before = same_answer(formats_spark, formats_vanilla, star(f"{delta['dv']} VERSION AS OF 1"))
    after = same_answer(formats_spark, formats_vanilla, star(delta["dv"]))
    assert before.count() > after.count()
    assert filtered(before)[0] and filtered(after)[0]


def test_parquet_footers_prune_beside_the_formats(formats_spark, formats_vanilla, dim, tmp_path):
    """A plain Parquet directory read in a session with the formats' extensions (Delta's turns on
    spark.sql.parquet.fieldId.read.enabled): its columns carry no field id, so the reader finds them by name, as the
    footers do, and the footers skip the files no key can be in."""
    path = str(tmp_path / "clustered")
    _fact(formats_spark).repartitionByRange(8, "k").sortWithinPartitions("k").write.parquet(path)
    query = f"SELECT f.k, f.v FROM parquet.`{path}` f JOIN dim d ON f.k = d.k WHERE d.band = 3"
    placed, why = filtered(same_answer(formats_spark, formats_vanilla, query))
    skipped = re.search(r"footers of 8 files read: (\d+) files", why)
    assert placed and skipped and int(skipped.group(1)) >= 6, why


# ------------------------------------------------------------------------------------------------ Iceberg

NAME_OF_K = "concat('n', CAST(k % 40 AS STRING)) AS name"
# keys of dim's `cat = 7` whose fact rows an equality delete file removes
EQ_DELETED = (7, 107, 1407)


@pytest.fixture(scope="module")
def iceberg(formats_spark, dim):
    """Tables of catalog `ice`: `deleted`, v2 with position deletes (merge-on-read; its first snapshot before
    them); `clustered`, 8 files of key ranges; `evolved`, k renamed to key, a new column named k added, and rows
    written after; `partitioned`, by days(day), then bucket(4, k) added (partition evolution) and rows written
    after; `eq_deleted`, 8 files of key ranges with an equality delete file; `by_name`, partitioned by a string
    column (40 values, a file and an input partition each)."""
    table_formats.require("iceberg")
    spark = formats_spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    spark.sql("CREATE TABLE ice.db.deleted (k INT, v BIGINT, day DATE) USING iceberg TBLPROPERTIES "
              "('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    _fact(spark).writeTo("ice.db.deleted").append()
    spark.sql("DELETE FROM ice.db.deleted WHERE v % 7 = 0")
    spark.sql("CREATE TABLE ice.db.clustered (k INT, v BIGINT, day DATE) USING iceberg "
              "TBLPROPERTIES ('write.distribution-mode' = 'none')")
    _fact(spark).repartitionByRange(8, "k").sortWithinPartitions("k").writeTo("ice.db.clustered").append()
    spark.sql("CREATE TABLE ice.db.evolved (k INT, v BIGINT, day DATE) USING iceberg")
    _fact(spark).writeTo("ice.db.evolved").append()
    spark.sql("ALTER TABLE ice.db.evolved RENAME COLUMN k TO key")
    spark.sql("ALTER TABLE ice.db.evolved ADD COLUMN k INT")
    _fact(spark).selectExpr("k AS key", "v + 100000 AS v", "day", "(k + 7) % 1500 AS k") \
        .writeTo("ice.db.evolved").append()
    # (few partitions: a writer task keeps a file open for each)
    few_days = _fact(spark).selectExpr("k", "v", "DATE'2024-01-01' + CAST(v % 4 AS INT) AS day")
    spark.sql("CREATE TABLE ice.db.partitioned (k INT, v BIGINT, day DATE) USING iceberg PARTITIONED BY (days(day))")
    few_days.writeTo("ice.db.partitioned").append()
    spark.sql("ALTER TABLE ice.db.partitioned ADD PARTITION FIELD bucket(4, k)")
    few_days.selectExpr("k", "v + 100000 AS v", "day").writeTo("ice.db.partitioned").append()
    # equality deletes (Spark's SQL writes position deletes only: through Iceberg's Java API), over key ranges
    spark.sql("CREATE TABLE ice.db.eq_deleted (k INT, v BIGINT, day DATE) USING iceberg "
              "TBLPROPERTIES ('format-version' = '2', 'write.distribution-mode' = 'none')")
    _fact(spark).repartitionByRange(8, "k").sortWithinPartitions("k").writeTo("ice.db.eq_deleted").append()
    table_formats.equality_deletes(spark, "ice.db.eq_deleted", "k", EQ_DELETED)
    # each file its own input partition (a split's open cost is 128 MB), 40 partitions by name
    spark.sql("CREATE TABLE ice.db.by_name (name STRING, v BIGINT) USING iceberg PARTITIONED BY (name) "
              "TBLPROPERTIES ('read.split.open-file-cost' = '134217728')")
    _fact(spark).selectExpr(NAME_OF_K, "v").writeTo("ice.db.by_name").append()
    # k and j swapped by two renames after a tag and a snapshot: those read the old k (field id 1), which the
    # current schema names k_old, while today's k is the old j (keys in the other order: other files)
    spark.sql("CREATE TABLE ice.db.swapped (k INT, j INT, v BIGINT) USING iceberg "
              "TBLPROPERTIES ('write.distribution-mode' = 'none')")
    _swappable(spark).writeTo("ice.db.swapped").append()
    spark.sql("ALTER TABLE ice.db.swapped CREATE TAG before_swap")
    spark.sql("ALTER TABLE ice.db.swapped RENAME COLUMN k TO k_old")
    spark.sql("ALTER TABLE ice.db.swapped RENAME COLUMN j TO k")
    return spark


def _swappable(spark):
    """The fact sorted by k into 16 files, j = 1499 - k: a key's rows lie in one file by k, another by j."""
    return _fact(spark).selectExpr("k", f"{DIM_KEYS - 1} - k AS j", "v").repartitionByRange(16, "k") \
        .sortWithinPartitions("k")


# no key of the dimension in the fact (its keys lie beyond the fact's), or no key kept at all
NO_KEY = {"beyond": "SELECT k + 1000000 AS k FROM dim WHERE cat = 7", "none": "SELECT k FROM dim WHERE cat = 1000"}
JOIN_KINDS = {
    "inner": "SELECT count(*), sum(f.v) FROM {fact} f JOIN ({keys}) d ON f.k = d.k",
    "semi": "SELECT count(*), sum(f.v) FROM {fact} f WHERE f.k IN ({keys})",
    "outer": "SELECT count(*), sum(f.v) FROM ({keys}) d LEFT JOIN {fact} f ON f.k = d.k",
}


@pytest.mark.parametrize("join, aqe", CASES)
def test_iceberg_position_deletes(formats_spark, formats_vanilla, iceberg, join, aqe):
    deletes = formats_spark.sql("SELECT count(*) FROM ice.db.deleted.delete_files").first()[0]
    assert deletes > 0, "the DELETE wrote no position delete files"
    df = same_answer(formats_spark, formats_vanilla, star("ice.db.deleted"), join, aqe)
    placed, why = filtered(df)
    assert placed, why


@pytest.mark.parametrize("join, aqe", CASES)
def test_iceberg_equality_deletes(formats_spark, formats_vanilla, iceberg, join, aqe):
    """The deleted keys' rows stay deleted in the files a filter keeps (their delete file goes with them)."""
    kinds = formats_spark.sql("SELECT content FROM ice.db.eq_deleted.delete_files").collect()
    assert [r[0] for r in kinds] == [2], f"not one equality delete file: {kinds}"
    df = same_answer(formats_spark, formats_vanilla, star("ice.db.eq_deleted"), join, aqe)
    assert not {r[0] for r in df.collect()} & set(EQ_DELETED)
    placed, why = filtered(df)
    assert placed, why


@pytest.mark.parametrize("join, aqe", CASES)
@pytest.mark.parametrize("kind", JOIN_KINDS)
def test_iceberg_scan_pruned_to_no_file(formats_spark, formats_vanilla, iceberg, kind, join, aqe):
    """Keys none of the fact's files may hold (or no key at all) prune every task of its Iceberg scan: the scan
    reads nothing and the query answers as vanilla's (an empty scan of a columnar source was planned row-based
    and failed ColumnarToRow's assertion)."""
    for keys in NO_KEY.values():
        query = JOIN_KINDS[kind].format(fact="ice.db.clustered", keys=keys)
        df = same_answer(formats_spark, formats_vanilla, query, join, aqe, rows_expected=False)
        placed, why = filtered(df)
        if placed:
            assert re.search(r"statistics of 8 files read from Iceberg's manifests \(no footer\): 8 files skipped", why) \
                or "0 keys" in why, why
        else:  # (AQE replaces a join whose build side is empty by an empty relation: no join left)
            assert declined_joins(df) or not joins(df), why


@pytest.mark.parametrize("join, aqe", CASES)
@pytest.mark.parametrize("read", ["VERSION AS OF {snapshot}", "VERSION AS OF 'before_swap'"])
def test_iceberg_snapshot_read_after_renames_binds_by_field_id(formats_spark, formats_vanilla, iceberg, read, join,
                                                                 aqe):
    """A snapshot or tag read before k and j were swapped reads the old k (field id 1): its files are pruned by that
    field's bounds, not by those of the column named k today (the old j): the files kept hold the keys."""
    snapshot = formats_spark.sql("SELECT snapshot_id FROM ice.db.swapped.snapshots").first()[0]
    query = (f"SELECT f.k, f.v FROM ice.db.swapped {read.format(snapshot=snapshot)} f JOIN dim d ON f.k = d.k "
             "WHERE d.band = 3")
    df = same_answer(formats_spark, formats_vanilla, query, join, aqe)
    placed, why = filtered(df)
    skipped = re.search(r"statistics of 16 files read from Iceberg's manifests \(no footer\): (\d+) files skipped", why)
    assert placed and skipped and int(skipped.group(1)) >= 8, why


@pytest.mark.parametrize("join, aqe", TWO_CASES)
def test_iceberg_clustered_files_skipped_by_the_manifests(formats_spark, formats_vanilla, iceberg, join, aqe):
    """Their tasks are dropped before any starts."""
    skipped_by_table_stats(formats_spark, formats_vanilla, "ice.db.clustered", "Iceberg's manifests", join, aqe)


def test_iceberg_schema_evolution(formats_spark, formats_vanilla, iceberg):
    """The join column renamed (key: field id of the first k) and a new column named k: either join key keeps
    its own rows (older files have no new k: NULL there)."""
    for key, (join, aqe) in zip(("key", "k"), TWO_CASES):
        df = same_answer(formats_spark, formats_vanilla, star("ice.db.evolved", key=key), join, aqe)
        placed, why = filtered(df)
        assert placed, why


def test_iceberg_partition_evolution_and_hidden_partitioning(formats_spark, formats_vanilla, iceberg):
    """k is the source of a partition field (bucket(4, k)) since the evolution, day the source of days(day): under
    a broadcast join their keys are Spark's dynamic partition pruning's, and no dynamic filter takes them; under a
    sort-merge join DPP has no broadcast to reuse and drops its filter, and a dynamic filter takes them (Iceberg's
    planning prunes by the partitions of both specs and the files' bounds)."""
    by_day = ("SELECT f.k, f.v FROM ice.db.partitioned f JOIN (SELECT DATE'2024-01-01' + k % 4 AS day, cat FROM dim) d "
              "ON f.day = d.day WHERE d.cat = 7")
    for query in (star("ice.db.partitioned"), by_day):
        df = same_answer(formats_spark, formats_vanilla, query, "broadcast", "false")
        placed, why = filtered(df)
        assert not placed and any("partition column" in reason for _, reason in declined_joins(df)), why
        df = same_answer(formats_spark, formats_vanilla, query, "sort-merge", "true")
        placed, why = filtered(df)
        assert placed, why


@pytest.mark.parametrize("join, aqe", [("sort-merge", "true"), ("sort-merge", "false")])
def test_iceberg_runtime_filtering_by_a_partition_column(formats_spark, formats_vanilla, iceberg, join, aqe):
    """A string partition column's keys (no bounds to prune by) go to Iceberg's own runtime filtering, as DPP's
    would: 2 names of 40, the other input partitions never start."""
    query = (f"SELECT f.name, f.v FROM ice.db.by_name f JOIN (SELECT {NAME_OF_K} FROM dim WHERE cat = 7) d "
             "ON f.name = d.name")
    df = same_answer(formats_spark, formats_vanilla, query, join, aqe)
    placed, why = filtered(df)
    assert placed, why
    assert "handed to the source's runtime filtering: 38 of 40 input partitions skipped" in why, why


@pytest.mark.parametrize("join, aqe", CASES)
def test_iceberg_runtime_filtering_to_no_partition(formats_spark, formats_vanilla, iceberg, join, aqe):
    """Names of no partition: the source's runtime filtering keeps none of its 40 input partitions, and the scan of
    none answers as vanilla's (no row)."""
    query = ("SELECT count(*), sum(f.v) FROM ice.db.by_name f JOIN (SELECT concat('none-', CAST(k AS STRING)) AS name "
             "FROM dim WHERE cat = 7) d ON f.name = d.name")
    df = same_answer(formats_spark, formats_vanilla, query, join, aqe, rows_expected=False)
    placed, why = filtered(df)
    if placed:
        assert "handed to the source's runtime filtering: 40 of 40 input partitions skipped" in why, why
    else:  # (or Spark's DPP pruned every partition, and AQE replaced the join by an empty relation)
        assert declined_joins(df) or not joins(df), why


def test_iceberg_time_travel(formats_spark, formats_vanilla, iceberg):
    """The snapshot before the delete and the latest answer differently; each equals vanilla's."""
    first = formats_spark.sql("SELECT snapshot_id FROM ice.db.deleted.snapshots ORDER BY committed_at").first()[0]
    before = same_answer(formats_spark, formats_vanilla, star(f"ice.db.deleted VERSION AS OF {first}"))
    after = same_answer(formats_spark, formats_vanilla, star("ice.db.deleted"))
    assert before.count() > after.count()
    assert filtered(before)[0] and filtered(after)[0]
