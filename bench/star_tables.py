"""The star join's tables (bench/dynamic_filter.py): the dim and the fact in its layouts, plain Parquet generated
once under .cache/bench/, and the shape of what was written."""

import os
import time

from common import DATA

CATS = 1000                  # dim.cat is uniform over [0, CATS); `cat < N` keeps N / CATS of the dim rows
FACT_FILES = 8
# the clustered layout's files: each holds one narrow key range, so that a table's per-file statistics can skip
# most of them (a sorted fact in 8 files would leave little to skip at 0.1% of keys scattered over the range)
CLUSTERED_FILES = 64


def _done(path):
    return os.path.exists(os.path.join(path, "_SUCCESS"))


def write_parquet(df, path, row_group_mb=None):
    writer = df.write.mode("overwrite")
    if row_group_mb:
        writer = writer.option("parquet.block.size", str(int(row_group_mb * 1024 * 1024)))
    writer.parquet(path)


def generate(what, path, make):
    """Writes `path` with make(path) unless it is already there, printing how long that took."""
    if _done(path):
        return
    print(f"generating {what} into {path} ...", flush=True)
    start = time.perf_counter()
    make(path)
    print(f"  ... {time.perf_counter() - start:.1f}s", flush=True)


def star_tables(spark, fact_rows, dim_rows, layouts, row_group_mb):
    """{'dim': path, 'random': path, 'clustered': path} (the clustered layout only when asked for; it is
    the random layout's rows sorted), generating what is missing."""
    paths = {"dim": os.path.join(DATA, f"star_dim_{dim_rows}.parquet")}
    generate(f"dim ({dim_rows:,} rows)", paths["dim"], lambda p: write_parquet(
        spark.range(0, dim_rows, 1, 2).selectExpr(
            "CAST(id AS INT) AS k",
            f"CAST(pmod(hash(id, 11), {CATS}) AS INT) AS cat",
            f"CAST(id * {CATS} DIV {dim_rows} AS INT) AS band",
            "concat('customer#', lpad(CAST(id AS STRING), 9, '0')) AS name"), p))

    rg = f"{row_group_mb:g}mb"
    paths["random"] = os.path.join(DATA, f"star_fact_{fact_rows}_{dim_rows}_random_{rg}.parquet")
    generate(f"fact, random layout ({fact_rows:,} rows)", paths["random"], lambda p: write_parquet(
        spark.range(0, fact_rows, 1, FACT_FILES).selectExpr(
            f"CAST(pmod(hash(id, 1), {dim_rows}) AS INT) AS k",
            "CAST(pmod(hash(id, 2), 100000) AS DOUBLE) / 100 AS amount",
            "CAST(pmod(hash(id, 3), 50) + 1 AS INT) AS qty",
            "element_at(array('store', 'web', 'catalog'), CAST(pmod(hash(id, 4), 3) + 1 AS INT)) AS channel"),
        p, row_group_mb))

    if "clustered" in layouts:
        paths["clustered"] = os.path.join(
            DATA, f"star_fact_{fact_rows}_{dim_rows}_clustered{CLUSTERED_FILES}_{rg}.parquet")
        generate(f"fact, clustered layout (the random layout's rows sorted by k into {CLUSTERED_FILES} files)",
                  paths["clustered"],
                  lambda p: write_parquet(spark.read.parquet(paths["random"])
                                   .repartitionByRange(CLUSTERED_FILES, "k").sortWithinPartitions("k"),
                                   p, row_group_mb))
    return paths


def parquet_shape(spark, path):
    """'8 files, 31 row groups, 212 MB' from the Parquet footers (through the JVM: no pyarrow here)."""
    files = [f for f in os.listdir(path) if f.endswith(".parquet")]
    size = sum(os.path.getsize(os.path.join(path, f)) for f in files)
    try:
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        groups = 0
        for f in files:
            hpath = jvm.org.apache.hadoop.fs.Path(os.path.join(path, f))
            reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
                jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(hpath, conf))
            try:
                groups += reader.getFooter().getBlocks().size()
            finally:
                reader.close()
        groups = f"{groups} row groups"
    except Exception:  # noqa: BLE001 - the shape is information only
        groups = "? row groups"
    return f"{len(files)} files, {groups}, {size / 2**20:.0f} MB"
