"""TPC-H for answer-equality tests and the dynamic-filter bench: data, the 22 queries as Spark SQL, temp views.

- ``generate(out_dir, scale_factor, parts)`` runs ``tpchgen-cli`` (the Rust TPC-H generator, from its PyPI
  wheel: dev/requirements.txt) and writes the eight tables as Parquet, ``out_dir/<table>/<table>.<n>.parquet``
  in ``parts`` files each (several files per table, as a real deployment has, so that footer pruning
  has files to skip). Cached like ``tpcds.generate``: a marker file records the generator and layout.
- ``queries(strip_limit=True)`` returns ``{query_number: spark_sql}`` for the 22 queries of DuckDB's ``tpch``
  extension (``duckdb-extension-tpch``, loaded by path from its wheel), transpiled with sqlglot as
  ``tpcds.transpile`` does. Five queries end in a LIMIT; tests strip it for the reason tests/tpcds.py
  gives, the bench keeps it.
- ``generate_date_sorted(out_dir, sorted_dir, scale_factor)`` writes lineitem and orders sorted by their
  date (``DATE_KEYS``; ``tpcds.sort_by_date``), as loaders that cluster by date leave them.
- ``register(spark, out_dir, sorted_dir=None)`` creates one temp view per table (lineitem and orders from
  ``sorted_dir`` when given).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

import tpcds

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")

# The date each fact table is sorted by in the date-sorted layout (generate_date_sorted)
DATE_KEYS = {"lineitem": "l_shipdate", "orders": "o_orderdate"}

# Parquet row groups of tpchgen-cli's writer: ~4 MB, so that sf 0.01 tables span a few row groups too.
ROW_GROUP_BYTES = 4 << 20


def _tpchgen() -> str:
    """The tpchgen-cli executable of this Python's environment."""
    found = shutil.which("tpchgen-cli", path=str(Path(sys.executable).parent)) or shutil.which("tpchgen-cli")
    if not found:
        raise RuntimeError("TPC-H data needs tpchgen-cli (dev/requirements.txt; dev/env.sh installs it)")
    return found


def _extension_path() -> str:
    try:
        import duckdb_extension_tpch
    except ImportError as e:
        raise RuntimeError("the TPC-H queries need the duckdb-extension-tpch package (dev/requirements.txt)") from e
    found = sorted((Path(duckdb_extension_tpch.__file__).parent / "extensions").glob("*/tpch.duckdb_extension"))
    if not found:
        raise RuntimeError(f"no tpch.duckdb_extension in {duckdb_extension_tpch.__file__}")
    return str(found[-1])


def generate(out_dir, scale_factor=0.01, parts=4) -> Path:
    """Writes every TPC-H table at ``scale_factor`` as Parquet into ``out_dir`` (``parts`` files a table);
    returns ``out_dir``. A no-op when ``out_dir`` already holds this data made by the same generator."""
    from importlib.metadata import version
    want = {"scale_factor": scale_factor, "parts": parts, "tpchgen-cli": version("tpchgen-cli"),
            "row_group_bytes": ROW_GROUP_BYTES, "tables": list(TABLES)}

    def build(tmp):
        subprocess.run([_tpchgen(), "parquet", "-s", str(scale_factor), "--parts", str(parts),
                        "--row-group-bytes", str(ROW_GROUP_BYTES), "--output-dir", str(tmp)], check=True)
        missing = [t for t in TABLES if not (tmp / t).is_dir()]
        if missing:
            raise RuntimeError(f"tpchgen-cli wrote no {missing} under {tmp}")

    return tpcds._build_once(Path(out_dir), _marker_name(scale_factor), want, build)


def _marker_name(scale_factor) -> str:
    return f"_tpch_sf{scale_factor:g}.json"


def generate_date_sorted(out_dir, sorted_dir, scale_factor=0.01) -> Path:
    """``generate``'s lineitem and orders (``out_dir``, at ``scale_factor``) sorted by their date into
    ``sorted_dir``; returns it."""
    source = json.loads((Path(out_dir) / _marker_name(scale_factor)).read_text())
    return tpcds.sort_by_date(out_dir, sorted_dir, DATE_KEYS, f"_tpch_sf{scale_factor:g}_date_sorted.json", source)


def register(spark, out_dir, sorted_dir=None) -> None:
    out_dir = Path(out_dir)
    missing = [t for t in TABLES if not (out_dir / t).is_dir()]
    if missing:
        raise FileNotFoundError(f"TPC-H tables missing under {out_dir}: {missing}: run tpch.generate first")
    for table in TABLES:
        where = Path(sorted_dir) if sorted_dir is not None and table in DATE_KEYS else out_dir
        spark.read.parquet(str(where / table)).createOrReplaceTempView(table)


def duckdb_queries() -> dict:
    con = duckdb.connect()
    con.execute(f"LOAD '{_extension_path()}'")
    return {n: q for n, q in con.execute("SELECT query_nr, query FROM tpch_queries() ORDER BY 1").fetchall()}


def queries(strip_limit=True) -> dict:
    """``{query_number: spark_sql}`` for the 22 queries; without the final LIMIT unless ``strip_limit=False``."""
    return {n: tpcds.transpile(sql.strip().rstrip(";"), strip_limit=strip_limit) for n, sql in duckdb_queries().items()}
