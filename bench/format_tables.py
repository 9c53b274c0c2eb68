"""The star join's fact in the table formats users keep it in (bench/dynamic_filter.py --formats): the Parquet
layout's rows copied once into a Delta table (deletion vectors) and an Iceberg v2 table (merge-on-read), in
the same order and file count, then a share of rows deleted (DELETED) so that every read goes through the
format's row-level deletes. Kept under .cache/bench/ (Delta by path, Iceberg in the Hadoop catalog `ice`
over .cache/bench/iceberg); the Spark line's releases are tests/table_formats.py's."""

import os
import shutil
import time

from common import DATA

FORMATS = ("parquet", "delta", "iceberg")
WAREHOUSE = os.path.join(DATA, "iceberg")
# the rows every format table deletes after it is written: one qty value of 50, in every file
DELETED = "qty = 50"


def session_settings(formats):
    """{key: value} a session that reads `formats` needs (the jars on the JVM's classpath, each format's
    extension and catalog), or a SystemExit naming what is missing on this Spark line."""
    wanted = [f for f in formats if f != "parquet"]
    if not wanted:
        return {}
    import table_formats  # tests/: the line's releases and their settings

    missing = [f for f in wanted if f not in table_formats.formats()]
    if missing:
        raise SystemExit(f"--formats {','.join(missing)}: no release for Spark {table_formats.LINE_NAME} in "
                         f"spark_sieve._spark_lines.TABLE_FORMATS (lines with one: run dev/bench --spark 4.0)")
    jars = table_formats.jars()
    absent = [f for f in wanted if not jars.get(f) or not all(os.path.isfile(j) for j in jars[f])]
    if absent:
        raise SystemExit(f"--formats {','.join(absent)}: the jars are not in SIEVE_FORMAT_JARS; run through dev/bench")
    return {"spark.driver.extraClassPath": table_formats.classpath(),
            "spark.sql.extensions": ",".join(table_formats.extensions()),
            **table_formats.session_settings(WAREHOUSE)}


def _done(marker):
    return os.path.exists(marker)


# a fact written in more files than this goes in commits of at most as many (Delta: a checkpoint every ten
# commits; Iceberg: a manifest each), as a table grown by appends is
BATCH_FILES = 1000


def file_batches(rows, layout, files, dim_rows):
    """[(rows, n)]: the fact's rows as commits of n files each (at most BATCH_FILES): clustered, one key range a
    commit and a file (sorted in it); random, rows split at random, each file's keys over the whole range."""
    commits = -(-files // BATCH_FILES)
    out = []
    for b in range(commits):
        n = files // commits + (1 if b < files % commits else 0)
        if layout == "clustered":
            lo, hi = b * dim_rows // commits, (b + 1) * dim_rows // commits
            part = rows.where(f"k >= {lo} AND k < {hi}").repartitionByRange(n, "k").sortWithinPartitions("k")
        else:
            part = rows.where(f"pmod(hash(k, amount, qty, 13), {commits}) = {b}").repartition(n)
        out.append((part, n))
    return out


def fact_table(spark, fmt, layout, source, name, row_group_mb, files, dim_rows, whole_source=True):
    """The SQL name of the star fact `name` (of layout `layout`) in `fmt`, made from the Parquet directory
    `source` when missing: its rows in `files` files (clustered: sorted by k, a key range each; more than
    BATCH_FILES: file_batches' commits), row groups of about `row_group_mb` MB, then DELETED's rows deleted.
    Parquet: `source` itself when `whole_source` (it has the files asked for), else a copy in `files` files."""
    if fmt == "parquet" and whole_source:
        return f"parquet.`{source}`"
    marker = os.path.join(DATA, f"{name}.{fmt}.done")
    path = os.path.join(DATA, fmt if fmt == "parquet" else "delta", name)
    table = {"parquet": f"parquet.`{path}`", "delta": f"delta.`{path}`"}.get(fmt, f"ice.bench.{name}")
    if _done(marker):
        return table
    print(f"generating the {layout} fact as a {fmt} table {table} in {files:,} files ...", flush=True)
    start = time.perf_counter()
    rows = spark.read.parquet(source)
    if files > BATCH_FILES:
        batches = file_batches(rows, layout, files, dim_rows)
    else:  # the clustered layout's key ranges, one per file and sorted in it, as the Parquet one's
        batches = [(rows.repartitionByRange(files, "k").sortWithinPartitions("k") if layout == "clustered"
                    else rows.repartition(files), files)]
    block = str(int(row_group_mb * 1024 * 1024))
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("parquet.block.size", block)
    try:
        if fmt == "iceberg":
            spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
            spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
            spark.sql(f"CREATE TABLE {table} (k INT, amount DOUBLE, qty INT, channel STRING) USING iceberg "
                      "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
                      "'write.update.mode' = 'merge-on-read', 'write.distribution-mode' = 'none', "
                      f"'write.parquet.row-group-size-bytes' = '{block}', "
                      "'write.target-file-size-bytes' = '1073741824')")
        else:
            shutil.rmtree(path, ignore_errors=True)
        for i, (batch, n) in enumerate(batches):
            if fmt == "iceberg":
                batch.writeTo(table).append()
            elif fmt == "delta":
                writer = batch.write.format("delta").mode("append").option("parquet.block.size", block)
                if i == 0:
                    writer = writer.option("delta.enableDeletionVectors", "true")
                writer.save(path)
            else:
                batch.write.mode("append").option("parquet.block.size", block).parquet(path)
            if len(batches) > 1:
                print(f"  commit {i + 1}/{len(batches)}: {n} files, {time.perf_counter() - start:.0f}s", flush=True)
        if fmt == "delta":
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        if fmt != "parquet":
            spark.sql(f"DELETE FROM {table} WHERE {DELETED}")
    finally:
        hadoop.unset("parquet.block.size")
    open(marker, "w").close()
    print(f"  ... {time.perf_counter() - start:.1f}s", flush=True)
    return table


def table_shape(spark, fmt, table):
    """'64 data files, 64 delete files' from the format's own metadata (information only)."""
    try:
        if fmt == "parquet":
            files = [f for f in os.listdir(table[len("parquet.`"):-1]) if f.endswith(".parquet")]
            return f"{len(files)} files"
        if fmt == "delta":
            detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
            return f"{detail['numFiles']} data files, {detail['sizeInBytes'] / 2**20:.0f} MB, deletion vectors"
        if fmt == "iceberg":
            data = spark.sql(f"SELECT count(*), sum(file_size_in_bytes) FROM {table}.data_files").first()
            deletes = spark.sql(f"SELECT count(*) FROM {table}.delete_files").first()[0]
            return f"{data[0]} data files, {(data[1] or 0) / 2**20:.0f} MB, {deletes} position-delete files"
    except Exception as e:  # noqa: BLE001 - the shape is information only
        return f"? ({str(e).splitlines()[0][:80]})"
    return ""
