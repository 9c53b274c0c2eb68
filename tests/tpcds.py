"""TPC-DS for answer-equality tests: data, the 99 queries as Spark SQL, and temp views.

Data and queries both come from DuckDB's ``tpcds`` extension, loaded from the ``duckdb-extension-tpcds``
package (its wheel carries the compiled extension file; it is LOADed by path, so nothing is downloaded at
run time). The extension is compiled for one exact DuckDB release, which is why dev/requirements.txt pins
``duckdb`` to the same version as ``duckdb-extension-tpcds``.

- ``generate(out_dir, scale_factor)`` runs ``CALL dsdgen(sf=...)`` and writes each of the 24 tables as
  Parquet into ``out_dir/<table>/part-0.parquet``, with small row groups (``ROW_GROUP_SIZE``) so that the
  fact tables span several row groups and row-group pruning gets exercised (from sf=1 up, DuckDB's default
  size). It is cached: a marker file
  ``out_dir/_tpcds_sf<sf>.json`` that records the generator versions and layout makes it a no-op.
- ``queries()`` returns ``{query_number: spark_sql}`` for the 99 queries of ``tpcds_queries()``,
  transpiled from DuckDB's dialect with sqlglot. DuckDB's copies already spell date arithmetic as
  literal casts and use no dialect-only functions, so sqlglot's output runs on Spark 4.3 as it is
  (double-quoted identifiers become back-quoted, NULLS LAST is written out to keep DuckDB's NULL
  ordering); ``_FIXES`` holds textual fixes should a query ever need one.
- ``generate_partitioned(spark, flat_dir, out_dir)`` writes the seven fact tables again, partitioned by
  their date key (``PARTITION_KEYS``) as production deployments write them: with Spark's own writer, so
  that a NULL key lands in ``<key>=__HIVE_DEFAULT_PARTITION__`` exactly as Spark writes it. Cached like
  ``generate`` (marker ``out_dir/_tpcds_sf<sf>_partitioned.json``).
- ``generate_date_sorted(flat_dir, out_dir, scale_factor)`` writes the fact tables sorted by their date key
  instead (as many files, row groups of the same rows, in date order: ``sort_by_date``).
- ``register(spark, out_dir, partitioned_dir=None)`` creates one temp view per table; with
  ``partitioned_dir``, the fact tables read the partitioned copy with the flat schema (same columns, order
  and types: Spark would infer the BIGINT keys as INT and put them last).
- ``SKIPPED`` lists the queries that cannot run on Spark, with the reason. It is empty: all 99 run.

The outermost LIMIT is stripped (``queries(strip_limit=True)``, the default)
---------------------------------------------------------------------------------------------------
84 of the 99 queries end in ``ORDER BY ... LIMIT 100``, and in many of them the ORDER BY is not a total
order (ties on the sort keys), so *which* rows survive the LIMIT is up to the engine: two correct plans
may legally return different rows, and a test comparing them would fail for no fault. Without the final
LIMIT the answer is a deterministic multiset, so it can be compared exactly and order-insensitively;
at the small scale factors used in tests the un-LIMIT-ed answers stay small (the largest at sf=0.01 is
a few thousand rows). This is also the stronger test: every row the query produces is checked, not
only the first 100. The alternative (keep the LIMIT, and compare only when the ORDER BY is total) would
either drop many queries or need per-query analysis of keys. The LIMIT is the query's only one
(checked here: no LIMIT is left anywhere after stripping), and inner ``rank()`` filters such as
``rnk <= 100`` are deterministic and kept. ORDER BY is kept (it is cheap and keeps the plans close to
the original queries).
"""

import json
import os
import shutil
import uuid
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp

TABLES = (
    "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer",
    "customer_address", "customer_demographics", "date_dim", "household_demographics", "income_band",
    "inventory", "item", "promotion", "reason", "ship_mode", "store", "store_returns", "store_sales",
    "time_dim", "warehouse", "web_page", "web_returns", "web_sales", "web_site",
)

# The date key each fact table is partitioned by in the partitioned layout (generate_partitioned).
PARTITION_KEYS = {
    "store_sales": "ss_sold_date_sk", "store_returns": "sr_returned_date_sk",
    "catalog_sales": "cs_sold_date_sk", "catalog_returns": "cr_returned_date_sk",
    "web_sales": "ws_sold_date_sk", "web_returns": "wr_returned_date_sk", "inventory": "inv_date_sk",
}

# Where the tests keep generated data ($SIEVE_CACHE, else the repository's git-ignored .cache), and their scale
CACHE = Path(os.environ.get("SIEVE_CACHE") or Path(__file__).resolve().parent.parent / ".cache") / "tpcds"
TEST_SCALE_FACTOR = 0.01

# dsdgen's smallest working scale: at sf=0.001 it was still spinning after 10 minutes (extension 1.5.5).
MIN_SCALE_FACTOR = 0.01

# Rows per Parquet row group: store_sales at sf=0.01 (28,810 rows) gets 8 of them. From sf=1 up (the
# benches), DuckDB's default: 4,096-row groups would make sf=10's store_sales 7,000 of them.
ROW_GROUP_SIZE = 4096
LARGE_ROW_GROUP_SIZE = 122_880


def _row_group_size(scale_factor) -> int:
    return ROW_GROUP_SIZE if scale_factor < 1 else LARGE_ROW_GROUP_SIZE

# {query_number: "why it cannot run on Spark"}. Empty: every query transpiles and runs on Spark 4.3.
SKIPPED: dict = {}

# {query_number: [(old, new), ...]}: textual fixes applied to sqlglot's Spark SQL. None needed today.
_FIXES: dict = {}


def _extension_path() -> str:
    """The tpcds extension file shipped inside the duckdb-extension-tpcds wheel."""
    try:
        import duckdb_extension_tpcds
    except ImportError as e:
        raise RuntimeError("the TPC-DS tests need the duckdb-extension-tpcds package "
                           "(dev/requirements.txt; dev/env.sh installs it)") from e
    root = Path(duckdb_extension_tpcds.__file__).parent / "extensions"
    found = sorted(root.glob("*/tpcds.duckdb_extension"))
    if not found:
        raise RuntimeError(f"no tpcds.duckdb_extension under {root}")
    return str(found[-1])


def connect(database=":memory:") -> "duckdb.DuckDBPyConnection":
    """A DuckDB connection (in memory unless ``database`` names a file) with the tpcds extension loaded
    from the Python package."""
    con = duckdb.connect(str(database))
    con.execute("SET enable_progress_bar = false")
    path = _extension_path()
    try:
        con.execute(f"LOAD '{path}'")
    except duckdb.Error as e:
        raise RuntimeError(f"cannot load {path} into duckdb {duckdb.__version__}: {e}. The extension is "
                           "built for one DuckDB release: pin duckdb to the version of "
                           "duckdb-extension-tpcds in dev/requirements.txt") from e
    return con


def _marker_name(scale_factor, partitioned=False) -> str:
    return f"_tpcds_sf{scale_factor:g}{'_partitioned' if partitioned else ''}.json"


def _generator_id(scale_factor) -> dict:
    from importlib.metadata import version
    return {"scale_factor": scale_factor, "duckdb": duckdb.__version__,
            "duckdb-extension-tpcds": version("duckdb-extension-tpcds"),
            "row_group_size": _row_group_size(scale_factor), "tables": list(TABLES)}


def _build_once(out_dir: Path, marker_name: str, want: dict, build) -> Path:
    """Runs ``build(tmp)`` and moves ``tmp`` into ``out_dir``, unless ``out_dir/marker_name`` already holds
    ``want``. The data is written to a sibling folder and renamed into place, so an interrupted run never
    leaves a half-written ``out_dir`` that looks complete."""
    marker = out_dir / marker_name
    if marker.is_file():
        try:
            if json.loads(marker.read_text()) == want:
                return out_dir
        except ValueError:
            pass
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        build(tmp)
        (tmp / marker_name).write_text(json.dumps(want, indent=1) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def generate(out_dir, scale_factor=0.01) -> Path:
    """Writes every TPC-DS table at ``scale_factor`` as Parquet, one directory per table, into
    ``out_dir``; returns ``out_dir``. A no-op when ``out_dir`` already holds this scale factor made by
    the same generator."""
    if not scale_factor >= MIN_SCALE_FACTOR:
        raise ValueError(f"scale_factor {scale_factor} < {MIN_SCALE_FACTOR}: dsdgen does not finish below it")

    def build(tmp):
        # from sf=1 up the generated tables live in a database file, which DuckDB can page out of memory
        database = tmp / "dsdgen.duckdb" if scale_factor >= 1 else ":memory:"
        con = connect(database)
        con.execute(f"CALL dsdgen(sf={scale_factor})")
        for table in TABLES:
            (tmp / table).mkdir()
            con.execute(f"COPY {table} TO '{tmp / table / 'part-0.parquet'}' "
                        f"(FORMAT parquet, ROW_GROUP_SIZE {_row_group_size(scale_factor)})")
        con.close()
        for leftover in tmp.glob("dsdgen.duckdb*"):
            leftover.unlink()

    return _build_once(Path(out_dir), _marker_name(scale_factor), _generator_id(scale_factor), build)


def generate_partitioned(spark, flat_dir, out_dir, scale_factor=0.01) -> Path:
    """Writes the fact tables of ``flat_dir`` (made by ``generate`` at ``scale_factor``) into ``out_dir``,
    each partitioned by its ``PARTITION_KEYS`` column, one file per partition; returns ``out_dir``. A
    no-op when ``out_dir`` already holds the partitioned copy of the same data."""
    flat_dir = Path(flat_dir)
    flat_marker = flat_dir / _marker_name(scale_factor)
    if not flat_marker.is_file():
        raise FileNotFoundError(f"{flat_marker} is missing: run tpcds.generate first")
    want = {"from": json.loads(flat_marker.read_text()), "partition_keys": PARTITION_KEYS, "writer": "spark"}

    def build(tmp):
        for table, key in PARTITION_KEYS.items():
            # repartition by the key: each partition's rows meet in one task, so one file per directory
            (spark.read.parquet(str(flat_dir / table)).repartition(key)
             .write.partitionBy(key).parquet(str(tmp / table)))

    return _build_once(Path(out_dir), _marker_name(scale_factor, partitioned=True), want, build)


def generate_date_sorted(flat_dir, out_dir, scale_factor=0.01) -> Path:
    """Writes the fact tables of ``flat_dir`` (made by ``generate``) into ``out_dir`` sorted by their date key
    (``PARTITION_KEYS``), as loaders that cluster by date leave them (``sort_by_date``); returns ``out_dir``.
    ``register(spark, flat_dir, out_dir)`` reads them."""
    source = json.loads((Path(flat_dir) / _marker_name(scale_factor)).read_text())
    return sort_by_date(flat_dir, out_dir, PARTITION_KEYS, f"_tpcds_sf{scale_factor:g}_date_sorted.json", source)


def sort_by_date(flat_dir, out_dir, keys, marker_name, source) -> Path:
    """Writes each table ``keys`` names from ``flat_dir`` into ``out_dir`` sorted by its date column
    (``keys[table]``): the same rows, in as many files as the flat copy, with its rows per row group (DuckDB's
    writer, as a bound), only in date order, so that each file and row group holds a range of dates. Cached like
    ``generate`` (``source``: what the flat copy was made from)."""
    flat_dir = Path(flat_dir)
    want = {"from": source, "sorted_by": keys, "writer": f"duckdb {duckdb.__version__}"}

    def build(tmp):
        con = duckdb.connect()
        con.execute(f"SET temp_directory = '{tmp / '.spill'}'")
        con.execute("SET enable_progress_bar = false")
        for table, key in keys.items():
            files = sorted(str(f) for f in (flat_dir / table).glob("*.parquet"))
            group_rows = con.execute(f"SELECT max(row_group_num_rows) FROM parquet_metadata({files!r})").fetchone()[0]
            # the order fixed once (row_number over the date key), then cut into as many files as the flat copy
            con.execute(f"CREATE OR REPLACE TEMP TABLE sorted AS SELECT *, row_number() OVER (ORDER BY {key}) - 1 "
                        f"AS _sorted_row FROM read_parquet({files!r})")
            rows = con.execute("SELECT count(*) FROM sorted").fetchone()[0]
            per_file = max(1, -(-rows // len(files)))
            (tmp / table).mkdir()
            for i in range(len(files)):
                con.execute(f"COPY (SELECT * EXCLUDE (_sorted_row) FROM sorted WHERE _sorted_row // {per_file} = {i} "
                            f"ORDER BY _sorted_row) TO '{tmp / table / f'part-{i}.parquet'}' "
                            f"(FORMAT parquet, ROW_GROUP_SIZE {group_rows})")
            con.execute("DROP TABLE sorted")
        con.close()
        shutil.rmtree(tmp / ".spill", ignore_errors=True)

    return _build_once(Path(out_dir), marker_name, want, build)


def register(spark, out_dir, partitioned_dir=None) -> None:
    """A temp view per table over its Parquet directory (made by ``generate``); with ``partitioned_dir``
    (made by ``generate_partitioned`` or ``generate_date_sorted``), the fact tables are read from there, with
    the flat schema."""
    out_dir = Path(out_dir)
    missing = [out_dir / t for t in TABLES if not (out_dir / t).is_dir()]
    if partitioned_dir is not None:
        missing += [Path(partitioned_dir) / t for t in PARTITION_KEYS if not (Path(partitioned_dir) / t).is_dir()]
    if missing:
        raise FileNotFoundError(f"TPC-DS tables missing: {[str(m) for m in missing]}: "
                                "run tpcds.generate (and generate_partitioned) first")
    for table in TABLES:
        df = spark.read.parquet(str(out_dir / table))
        if partitioned_dir is not None and table in PARTITION_KEYS:
            # the explicit schema keeps the key's type; the select puts the key back where it was
            df = spark.read.schema(df.schema).parquet(str(Path(partitioned_dir) / table)).select(*df.columns)
        df.createOrReplaceTempView(table)


# The width of the Iceberg fact tables' date-key partitions (truncate(DATE_BUCKET, key)): a month of date keys
DATE_BUCKET = 30


def write_facts(spark, flat_dir, fmt, where) -> dict:
    """The fact tables of ``flat_dir`` written as ``fmt`` tables: Delta path tables under the directory
    ``where``, or Iceberg tables in the namespace ``where`` (e.g. ``ice.tpcds``: v2, partitioned by
    truncate(DATE_BUCKET, date key)); ``{table: SQL name}``. Writes them every time (the callers' tables are
    their own)."""
    names = {}
    for table, key in PARTITION_KEYS.items():
        df = spark.read.parquet(str(Path(flat_dir) / table))
        if fmt == "delta":
            names[table] = f"delta.`{Path(where) / table}`"
            df.write.format("delta").mode("overwrite").save(str(Path(where) / table))
        elif fmt == "iceberg":
            names[table] = f"{where}.{table}"
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {where}")
            spark.sql(f"DROP TABLE IF EXISTS {names[table]}")
            df.createOrReplaceTempView("_tpcds_fact_rows")
            spark.sql(f"CREATE TABLE {names[table]} USING iceberg PARTITIONED BY (truncate({DATE_BUCKET}, {key})) "
                      "TBLPROPERTIES ('format-version' = '2') AS SELECT * FROM _tpcds_fact_rows")
            spark.catalog.dropTempView("_tpcds_fact_rows")
        else:
            raise ValueError(f"unknown table format {fmt!r} (delta, iceberg)")
    return names


def register_facts(spark, flat_dir, names) -> None:
    """``register``'s views, with the fact tables read from ``names`` (``write_facts``'), in the flat schema."""
    register(spark, flat_dir)
    for table, name in names.items():
        columns = spark.table(table).columns
        spark.sql(f"SELECT * FROM {name}").select(*columns).createOrReplaceTempView(table)


def duckdb_queries(con=None) -> dict:
    """``{query_number: sql}`` in DuckDB's dialect, as ``tpcds_queries()`` has them."""
    con = con or connect()
    return {n: q for n, q in con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY 1").fetchall()}


def strip_outer_limit(tree: exp.Expression) -> exp.Expression:
    """Drops the query's final LIMIT; refuses a query that would still hold a LIMIT afterwards."""
    tree = tree.copy()
    tree.set("limit", None)
    if tree.find(exp.Limit) is not None:
        raise ValueError("a LIMIT remains inside the query; its answer may not be deterministic")
    return tree


def transpile(sql: str, strip_limit=True, dialect="spark") -> str:
    """One DuckDB-dialect query in ``dialect`` (``spark`` or ``duckdb``), optionally without its LIMIT."""
    trees = sqlglot.parse(sql, read="duckdb")
    if len(trees) != 1:
        raise ValueError(f"expected one statement, got {len(trees)}")
    tree = trees[0]
    if strip_limit:
        tree = strip_outer_limit(tree)
    return tree.sql(dialect=dialect)


def queries(strip_limit=True, con=None) -> dict:
    """``{query_number: spark_sql}`` for all 99 TPC-DS queries (the SKIPPED ones included: callers
    decide), transpiled from DuckDB's dialect; without the final LIMIT unless ``strip_limit=False``."""
    out = {}
    for n, sql in duckdb_queries(con).items():
        spark_sql = transpile(sql, strip_limit=strip_limit)
        for old, new in _FIXES.get(n, ()):
            if old not in spark_sql:
                raise ValueError(f"q{n}: fix {old!r} no longer applies to sqlglot's output")
            spark_sql = spark_sql.replace(old, new)
        out[n] = spark_sql
    return out
