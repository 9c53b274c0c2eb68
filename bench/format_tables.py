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


def fact_table(spark, fmt, layout, source, name, row_group_mb, files):
    """The SQL name of the star fact `name` (of layout `layout`) in `fmt`, made from the Parquet directory
    `source` when missing: its rows in `files` files (clustered: sorted by k, a key range each), row groups of
    about `row_group_mb` MB, then DELETED's rows deleted. Parquet: `source` itself."""
    if fmt == "parquet":
        return f"parquet.`{source}`"
    marker = os.path.join(DATA, f"{name}.{fmt}.done")
    path = os.path.join(DATA, "delta", name)
    table = f"delta.`{path}`" if fmt == "delta" else f"ice.bench.{name}"
    if _done(marker):
        return table
    print(f"generating the {layout} fact as a {fmt} table {table} ...", flush=True)
    start = time.perf_counter()
    rows = spark.read.parquet(source)
    # `files` files: the clustered layout's key ranges, one per file and sorted in it, as the Parquet one's
    rows = (rows.repartitionByRange(files, "k").sortWithinPartitions("k") if layout == "clustered"
            else rows.repartition(files))
    block = str(int(row_group_mb * 1024 * 1024))
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("parquet.block.size", block)
    try:
        if fmt == "delta":
            shutil.rmtree(path, ignore_errors=True)
            (rows.write.format("delta").option("delta.enableDeletionVectors", "true")
             .option("parquet.block.size", block).save(path))
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        else:
            spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
            spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
            spark.sql(f"CREATE TABLE {table} (k INT, amount DOUBLE, qty INT, channel STRING) USING iceberg "
                      "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
                      "'write.update.mode' = 'merge-on-read', 'write.distribution-mode' = 'none', "
                      f"'write.parquet.row-group-size-bytes' = '{block}', "
                      "'write.target-file-size-bytes' = '1073741824')")
            rows.writeTo(table).append()
        spark.sql(f"DELETE FROM {table} WHERE {DELETED}")
    finally:
        hadoop.unset("parquet.block.size")
    open(marker, "w").close()
    print(f"  ... {time.perf_counter() - start:.1f}s", flush=True)
    return table


def table_shape(spark, fmt, table):
    """'64 data files, 64 delete files' from the format's own metadata (information only)."""
    try:
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
