"""Apache Spark's own SQL golden-file inputs, run with spark-sieve off and on, and the outcomes compared.

The corpus is ``sql-tests/inputs/**`` of Spark's ``spark-sql`` test jar (dev/sql-corpus-fetch puts it
under ``.cache/sql-corpus/inputs``): some 350 files that Spark's SQLQueryTestSuite runs against golden
outputs. Nobody here wrote them, which is the point: they hold joins, subqueries and set operations
shaped in ways our own tests never thought of. Here they are not compared with Spark's golden outputs
but vanilla against spark-sieve, statement by statement:

- **Parsing** follows SQLQueryTestSuite / SQLQueryTestHelper: lines whose trimmed text starts with
  ``--`` are comments (except ``--QUERY-DELIMITER-START/END``, which bracket a statement), the code is
  split at every ``;`` not preceded by a backslash, ``--IMPORT other.sql`` puts the code of another
  input (path relative to the inputs root) first, ``--SET k=v[,k=v]`` sets configs for the whole
  file, and of each ``--CONFIG_DIMn`` dimension the first config set is used (Spark runs each
  combination; one is enough to compare two engines). ``--ONLY_IF x`` runs the file only when ``spark``
  is among x. As in Spark, ``postgreSQL/`` runs with ANSI on and legacy intervals (and its helper
  functions ``booleq``/``boolne``/``vol``, here as SQL functions), ``nonansi/`` with ANSI off,
  ``timestampNTZ/`` with ``TIMESTAMP_NTZ`` as timestamp type, everything else with ANSI on; the
  built-in Parquet tables ``testdata``, ``arraydata``, ``mapdata``, ``aggtest``, ``onek``, ``tenk1``
  are created once per run. Files under ``udf/``, ``udaf/``, ``udtf/`` need Spark's Scala/Python test
  UDFs: they are listed as not runnable, never run.
- **Running** (``run_files``): one SparkContext per process (local[2], 4 shuffle partitions), the same
  Spark settings in both runs; the sieve run loads the extension through ``spark_sieve.configure`` (with
  ``spark.sieve.testing.placeEveryFilter``, tests/forced.py: a dynamic filter on every join the rule allows,
  every movable predicate moved), the vanilla run is plain Spark: no jar, no extension. Each file gets a fresh
  ``spark.newSession()`` (as SQLQueryTestSuite does: temp views, temp functions, variables, current
  database and every SQL config start over), the catalog objects it created are dropped and the cache
  cleared afterwards. A temp view whose plan reads no file (VALUES, range, ...) is written to Parquet
  and replaced by a view over the files, so that joins scan files and dynamic filters have something
  to prune; when that write fails the original view stays (and the statement's ``note`` says why).
  Each statement's outcome is its answer (every value cast to STRING, rows in order, and whether the
  query is sorted in Spark's sense, ``isSemanticallySorted``) or its error (condition, JVM class,
  root cause, first line of the message).
- **Guards**: a statement's Spark jobs are cancelled after ``STATEMENT_TIMEOUT_S``; a file stops
  after ``FILE_BUDGET_S`` (later statements are "skipped"). The ``run`` command supervises a worker
  process and restarts it after the file it was in when it died or stopped reporting for
  ``HANG_LIMIT_S`` (a JVM crash or a hang in the driver cannot take the whole run down).
- **Comparing** (``compare``): sorted queries in order, others as sorted lists; FLOAT/DOUBLE columns to
  10 significant digits (the order of a floating-point sum may follow the plan). Every statement that
  differs is re-run with sieve off in a third process (``rerun_vanilla``): when vanilla disagrees with
  itself the statement is "nondeterministic in vanilla" (current_timestamp, temp paths, ...), listed
  apart, never dropped.

CLI (each side in its own process and JVM)::

    python tests/sql_corpus.py run --sieve off --out vanilla.json [FILE_OR_GLOB ...]   (plain Spark)
    python tests/sql_corpus.py run --sieve on  --out sieve.json  [FILE_OR_GLOB ...]
    python tests/sql_corpus.py compare vanilla.json sieve.json [--report report.txt] [--no-rerun]

FILE_OR_GLOB is relative to the inputs root (``subquery/**``, ``join*.sql``); none means every file.
``compare`` exits 1 when there are differences (nondeterministic ones excepted).
"""

import argparse
import fnmatch
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

from forced import FORCED

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("SIEVE_CACHE") or REPO / ".cache") / "sql-corpus"
INPUTS = CORPUS / "inputs"
TEST_DATA = CORPUS / "test-data"

STATEMENT_TIMEOUT_S = 300          # a statement's jobs are cancelled after this
FILE_BUDGET_S = 3600               # statements of a file that start later are skipped (1,145 in the largest)
HANG_LIMIT_S = STATEMENT_TIMEOUT_S + 300   # no event for this long: the worker is killed
MAX_STORED_ROWS = 10000            # larger answers are kept as digests plus a sample

TEST_UDF_DIRS = ("udf/", "udaf/", "udtf/")
NEEDS_TEST_UDFS = "needs test UDFs (Spark's Scala/Python test UDFs, udf/ udaf/ udtf/)"
SPARK_SETTINGS_BY_DIR = {            # as SQLQueryTestSuite.runQueries sets them per kind of file
    "postgreSQL/": [("spark.sql.ansi.enabled", "true"), ("spark.sql.legacy.interval.enabled", "true")],
    "nonansi/": [("spark.sql.ansi.enabled", "false")],
    "timestampNTZ/": [("spark.sql.timestampType", "TIMESTAMP_NTZ")],
}
DEFAULT_SPARK_SETTINGS = [("spark.sql.ansi.enabled", "true")]
# postgreSQL/ files call these; Spark registers Scala UDFs, the same functions in SQL do the same
PG_FUNCTIONS = [
    "CREATE TEMPORARY FUNCTION booleq(b1 BOOLEAN, b2 BOOLEAN) RETURNS BOOLEAN RETURN b1 = b2",
    "CREATE TEMPORARY FUNCTION boolne(b1 BOOLEAN, b2 BOOLEAN) RETURNS BOOLEAN RETURN b1 != b2",
    "CREATE TEMPORARY FUNCTION vol(s STRING) RETURNS STRING RETURN s",
]
# leaves of a view's plan that hold its data inline: such a view is materialised as Parquet
INLINE_LEAVES = {"LocalRelation", "Range", "OneRowRelation", "ResolvedInlineTable", "EmptyRelation"}
TEMP_VIEW_RE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(GLOBAL\s+)?TEMP(?:ORARY)?\s+VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(`[^`]+`|[\w]+)", re.IGNORECASE)


def log(msg):
    print(f"[sql-corpus] {msg}", file=sys.stderr, flush=True)


# ============================================================================ corpus files and parsing

def list_files(patterns=(), inputs=INPUTS):
    """Input files (paths relative to ``inputs``, '/'-separated, sorted as Spark sorts test cases)
    matching any of ``patterns`` (fnmatch globs, ``**`` included; a plain name matches itself)."""
    every = sorted(p.relative_to(inputs).as_posix() for p in inputs.rglob("*.sql"))
    if not patterns:
        return every
    return [f for f in every if any(f == p or fnmatch.fnmatchcase(f, p) for p in patterns)]


def split_comments_and_code(text):
    """SQLQueryTestHelper.splitCommentsAndCodes: (comment lines, code lines)."""
    comments, code = [], []
    for line in text.split("\n"):
        s = line.strip()
        is_comment = s.startswith("--") and not s.startswith("--QUERY-DELIMITER")
        (comments if is_comment else code).append(line)
    return comments, code


def _split_semicolons(lines):
    # Spark's split("(?<=[^\\\\]);"): at every ';' not preceded by a backslash (not only at line ends)
    return re.split(r"(?<=[^\\]);", "\n".join(lines))


def statements(code, comments, inputs=INPUTS):
    """SQLQueryTestHelper.getQueries: the statements of a file, imported code first."""
    imported = []
    for line in comments:
        if line.startswith("--IMPORT "):
            other = inputs / line[len("--IMPORT "):]
            if other.is_file():       # Spark ignores an import naming no test case
                imported += split_comments_and_code(other.read_text(encoding="utf-8"))[1]
    all_code = imported + code
    if any(c.strip().startswith("--QUERY-DELIMITER") for c in all_code):
        pieces = _split_with_delimiters(all_code)
    else:
        pieces = _split_semicolons(all_code)
    out = []
    for piece in (p.strip() for p in pieces):
        # "fix misplacement when comment is at the end of the query"
        piece = "\n".join(x for x in piece.split("\n") if not x.startswith("--")).strip() if piece else ""
        if piece:
            out.append(piece)
    return out


def _split_with_delimiters(all_code):
    """Statements bracketed by --QUERY-DELIMITER-START/END stay whole; the rest split at ';'."""
    pieces, others, current, inside = [], [], "", False
    for line in all_code:
        s = line.strip()
        if s.startswith("--QUERY-DELIMITER-START"):
            inside = True
            pieces += _split_semicolons(others)
            others = []
        elif s.startswith("--QUERY-DELIMITER-END"):
            inside = False
            pieces.append("\n" + (current[:-1] if current.endswith(";") else current))
            current = ""
        elif inside:
            current += "\n" + line
        else:
            others.append(line)
    if others:
        pieces += _split_semicolons(others)
    return pieces


def _config_pairs(text):
    """'k=v,k2=v2' as [(k, v), ...], as Spark reads --SET and --CONFIG_DIM lines."""
    pairs = []
    for kv in text.split(","):
        key, eq, value = kv.partition("=")
        if eq:
            pairs.append((key.strip(), value.strip()))
    return pairs


def file_settings(comments):
    """--SET configs, then the first config set of each --CONFIG_DIM dimension."""
    settings = []
    for line in comments:
        if line.startswith("--SET "):
            settings += _config_pairs(line[len("--SET "):])
    first_of_dim = {}
    for line in comments:
        if line.startswith("--CONFIG_DIM"):
            rest = line[len("--CONFIG_DIM"):]
            dim, _, config_set = rest.partition(" ")
            first_of_dim.setdefault(dim, _config_pairs(config_set))
    for dim in sorted(first_of_dim):
        settings += first_of_dim[dim]
    return settings


def parse_file(name, inputs=INPUTS):
    """Everything needed to run one input file: a dict with name, statements, settings (the kind of
    file's own first, then the file's), whether it needs the postgreSQL helper functions, and
    ``not_runnable`` (a reason) when it cannot run here."""
    comments, code = split_comments_and_code((inputs / name).read_text(encoding="utf-8"))
    parsed = {"name": name, "statements": statements(code, comments, inputs), "not_runnable": None,
              "pg_functions": name.startswith("postgreSQL/")}
    only_if = [d.strip() for c in comments if c.startswith("--ONLY_IF") for d in c[9:].split(",")]
    if name.startswith(TEST_UDF_DIRS):
        parsed["not_runnable"] = NEEDS_TEST_UDFS
    elif only_if and "spark" not in only_if:
        parsed["not_runnable"] = f"--ONLY_IF {', '.join(only_if)}"
    kind = next((v for d, v in SPARK_SETTINGS_BY_DIR.items() if name.startswith(d)), DEFAULT_SPARK_SETTINGS)
    parsed["settings"] = kind + file_settings(comments)
    return parsed


# ============================================================================ the Spark session

def _snapshot_jar(builder, workdir):
    """Point spark.jars at a private copy of the bundled jar: the wheel may be reinstalled while a run
    is going, and a jar replaced under a running JVM fails its later class loads."""
    import spark_sieve
    src = spark_sieve.jar_path()
    dst = Path(workdir) / "spark-sieve.jar"
    for _ in range(10):
        shutil.copyfile(src, dst)
        try:
            with zipfile.ZipFile(dst) as z:
                z.namelist()
            break
        except zipfile.BadZipFile:       # copied while being written: try again
            time.sleep(3)
    else:
        raise RuntimeError(f"{src} is not a readable jar")
    jars = builder._options["spark.jars"].split(",")
    builder.config("spark.jars", ",".join(str(dst) if j == src else j for j in jars))
    return hashlib.sha256(dst.read_bytes()).hexdigest()


def session_conf(sieve, workdir):
    """The configuration of a run: Spark's settings are the same in both; the sieve run adds its own."""
    tz = "America/Los_Angeles"      # SQLQueryTestSuite's time zone (its golden files assume it)
    return {
        "spark.app.name": f"sql-corpus-{'sieve' if sieve else 'vanilla'}",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": f"-Duser.timezone={tz} -Duser.language=en -Duser.country=US",
        "spark.sql.session.timeZone": tz,
        "spark.sql.datetime.java8API.enabled": "true",
        "spark.sql.codegen.fallback": "false",       # generated code that does not compile fails
        "spark.sql.warehouse.dir": str(Path(workdir) / "warehouse"),
        **({"spark.sieve.enabled": "true", **FORCED} if sieve else {}),
    }


def build_session(sieve, workdir):
    """The process's one SparkContext: with the extension for the sieve run, vanilla Spark (no jar, no
    extension) for the other. Returns (session, jar sha or None)."""
    from pyspark.sql import SparkSession
    import spark_sieve
    builder = SparkSession.builder.master("local[2]")
    for key, value in session_conf(sieve, workdir).items():
        builder = builder.config(key, value)
    jar_sha = None
    if sieve:
        spark_sieve.configure(builder)
        jar_sha = _snapshot_jar(builder, workdir)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")     # every failing statement would log a stack trace
    return spark, jar_sha


_PG_SCHEMA = ("unique1 int, unique2 int, two int, four int, ten int, twenty int, hundred int, "
              "thousand int, twothousand int, fivethous int, tenthous int, odd int, even int, "
              "stringu1 string, stringu2 string, string4 string")


def create_builtin_tables(spark):
    """SQLQueryTestSuite.createTestTables: Parquet tables in the default database."""
    def tsv(file, schema):
        return spark.read.options(delimiter="\t", header="false").schema(schema).csv(str(TEST_DATA / file))
    tables = {
        "testdata": spark.range(1, 101).selectExpr("CAST(id AS INT) key", "CAST(id AS STRING) value")
                         .repartition(1),
        "arraydata": spark.sql("SELECT * FROM VALUES (array(1, 2, 3), array(array(1, 2, 3))), "
                               "(array(2, 3, 4), array(array(2, 3, 4))) AS t(arraycol, nestedarraycol)"),
        "mapdata": spark.sql("SELECT * FROM VALUES (map(1, 'a1', 2, 'b1', 3, 'c1', 4, 'd1', 5, 'e1')), "
                             "(map(1, 'a2', 2, 'b2', 3, 'c2', 4, 'd2')), (map(1, 'a3', 2, 'b3', 3, 'c3')), "
                             "(map(1, 'a4', 2, 'b4')), (map(1, 'a5')) AS t(mapcol)"),
        "aggtest": tsv("postgresql/agg.data", "a int, b float"),
        "onek": tsv("postgresql/onek.data", _PG_SCHEMA),
        "tenk1": tsv("postgresql/tenk.data", _PG_SCHEMA),
    }
    for name, df in tables.items():
        if not spark.catalog.tableExists(f"default.{name}"):
            df.write.format("parquet").saveAsTable(f"default.{name}")


# ============================================================================ per-file state

def catalog_objects(spark):
    """Databases, persistent tables/views, persistent functions and global temp views that exist now."""
    objs = {"databases": set(), "tables": set(), "functions": set(), "global_views": set()}
    for (db,) in spark.sql("SHOW DATABASES").collect():
        objs["databases"].add(db)
        for row in _quiet_collect(spark, f"SHOW TABLES IN `{db}`"):
            if not row.isTemporary:
                objs["tables"].add((db, row.tableName))
    objs["functions"] = {r[0] for r in _quiet_collect(spark, "SHOW USER FUNCTIONS")}
    objs["global_views"] = {r.viewName for r in _quiet_collect(spark, "SHOW VIEWS IN global_temp")}
    return objs


def _quiet_collect(spark, sql):
    try:
        return spark.sql(sql).collect()
    except Exception:             # an odd object must not stop the clean-up of the others
        return []


def drop_new_objects(spark, before):
    """Drops what a file created in the catalog (a new session does not isolate it) and the cache."""
    after = catalog_objects(spark)
    for db in after["databases"] - before["databases"]:
        _try_sql(spark, f"DROP DATABASE IF EXISTS `{db}` CASCADE")
    for db, table in after["tables"] - before["tables"]:
        if db in before["databases"]:
            if not _try_sql(spark, f"DROP TABLE IF EXISTS `{db}`.`{table}`"):
                _try_sql(spark, f"DROP VIEW IF EXISTS `{db}`.`{table}`")
    for fn in after["functions"] - before["functions"]:
        _try_sql(spark, f"DROP FUNCTION IF EXISTS {fn}")
    for view in after["global_views"] - before["global_views"]:
        _try_sql(spark, f"DROP VIEW IF EXISTS global_temp.`{view}`")
    spark.catalog.clearCache()


def _try_sql(spark, sql):
    try:
        spark.sql(sql)
        return True
    except Exception:
        return False


def new_file_session(base, parsed):
    """A fresh session for one file with its settings applied; returns (session, setup errors)."""
    session = base.newSession()
    errors = []
    for sql in ([f"SET {k}={v}" for k, v in parsed["settings"]]
                + (PG_FUNCTIONS if parsed["pg_functions"] else [])):
        try:
            session.sql(sql)
        except Exception as e:
            errors.append(f"{sql}: {_first_line(e)}")
    return session, errors


# ============================================================================ running one statement

def _first_line(e, limit=300):
    text = str(e).strip().split("\n")[0]
    return text[:limit]


def _java_throwable(e):
    return getattr(e, "_origin", None) or getattr(e, "java_exception", None)


def error_record(e):
    """Condition (SparkThrowable.getCondition), JVM class, root cause class and first message line."""
    rec = {"condition": None, "type": type(e).__name__, "java_class": None, "root_cause": None,
           "message": _first_line(e)}
    try:
        rec["condition"] = e.getCondition() if hasattr(e, "getCondition") else None
        jt = _java_throwable(e)
        if jt is not None:
            rec["java_class"] = jt.getClass().getName()
            if type(e).__name__ == "Py4JJavaError":     # its str() names only the py4j call
                rec["message"] = _first_line(jt.toString())
            if rec["condition"] is None and hasattr(jt, "getCondition"):
                rec["condition"] = jt.getCondition()
            cause, depth = jt, 0
            while cause.getCause() is not None and depth < 20:
                cause, depth = cause.getCause(), depth + 1
            if depth:
                msg = str(cause.getMessage() or "").strip().split("\n")[0][:300]
                rec["root_cause"] = f"{cause.getClass().getName()}: {msg}"
    except Exception:              # the JVM side of an odd error: keep what we have
        pass
    if not type(e).__module__.startswith(("pyspark", "py4j")):
        rec["condition"] = "HARNESS_PYTHON_ERROR"      # a bug here, not an outcome of Spark's
    return rec


def is_semantically_sorted(plan):
    """SQLQueryTestHelper.isSemanticallySorted on the analyzed plan (through py4j)."""
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext
    gw = SparkContext._gateway

    def isa(node, cls):
        return is_instance_of(gw, node, "org.apache.spark.sql.catalyst.plans.logical." + cls)

    def walk(node):
        if any(isa(node, c) for c in ("Join", "Aggregate", "Generate", "Sample", "Distinct")):
            return False
        if node.nodeName() == "CommandResult":            # an eagerly run command: its command
            return walk(node.commandLogicalPlan())
        if node.nodeName() in ("DescribeTableCommand", "DescribeColumnCommand", "DescribeQueryCommand",
                               "DescribeRelation", "DescribeColumn"):
            return True
        inner = node                                      # PhysicalOperation(_, _, Sort(_, true, ...))
        while inner.nodeName() in ("Project", "Filter"):
            inner = inner.child()
        if inner.nodeName() == "Sort" and getattr(inner, "global")():
            return True
        children = node.children()
        return any(walk(children.apply(i)) for i in range(children.length()))

    return walk(plan)


def answer_record(df):
    """Runs the query once: rows with every value cast to STRING (None for NULL), in order."""
    jdf = df._jdf
    fields = list(jdf.schema().fields())
    types = [f.dataType().typeName() for f in fields]
    sorted_ = is_semantically_sorted(jdf.queryExecution().analyzed())
    names = [f"c{i}" for i in range(len(fields))]
    try:    # by position: names may repeat or be odd
        as_strings = df.toDF(*names).selectExpr(*[f"CAST({n} AS STRING)" for n in names])
    except Exception:               # a type STRING cannot take: Python's own conversion
        as_strings = None
    if as_strings is not None:
        rows = [list(r) for r in as_strings.collect()]
    else:
        rows = [[None if v is None else str(v) for v in r] for r in df.collect()]
    ran = (as_strings if as_strings is not None else df)._jdf.queryExecution()
    rec = {"kind": "answer", "schema": jdf.schema().catalogString(), "types": types,
           "sorted": sorted_, "row_count": len(rows),
           # whether sieve put a dynamic filter in the plan (the physical one; with AQE its string
           # holds the initial plan too): the run must exercise them for the comparison to mean much
           "dynamic_filter": "DynamicFilter" in ran.executedPlan().toString()}
    if len(rows) > MAX_STORED_ROWS:
        rec.update(rows=rows[:50], truncated=True, digest=_digest(rows, sorted_))
    else:
        rec["rows"] = rows
    return rec


def _digest(rows, sorted_):
    keyed = [json.dumps(r) for r in rows]
    return hashlib.sha256("\n".join(keyed if sorted_ else sorted(keyed)).encode()).hexdigest()


def run_statement(session, sql, group):
    """One statement's outcome; its Spark jobs are cancelled after STATEMENT_TIMEOUT_S."""
    sc = session.sparkContext
    fired = threading.Event()

    def cancel():
        fired.set()
        sc.cancelJobGroup(group)

    sc.setJobGroup(group, sql[:200], interruptOnCancel=True)
    timer = threading.Timer(STATEMENT_TIMEOUT_S, cancel)
    timer.daemon = True
    start = time.monotonic()
    timer.start()
    try:
        rec = answer_record(session.sql(sql))
    except Exception as e:
        rec = {"kind": "error", "error": error_record(e)}
        if fired.is_set():
            rec["error"]["condition"] = f"HARNESS_TIMEOUT_{STATEMENT_TIMEOUT_S}S"
    finally:
        timer.cancel()
    rec["elapsed"] = round(time.monotonic() - start, 3)
    return rec


# ============================================================================ temp views as Parquet

def materialise_view(session, sql, view_dir):
    """After a successful CREATE TEMP VIEW over inline data: the view written to Parquet and replaced
    by a view over the files (same name, same columns). Returns a note for the statement, or None."""
    m = TEMP_VIEW_RE.match(sql)
    if not m:
        return None
    is_global, name = bool(m.group(1)), m.group(2)
    qualified = f"global_temp.{name}" if is_global else name
    try:
        df = session.table(qualified)
        leaves = [leaf.nodeName() for leaf in _scala_list(df._jdf.queryExecution().analyzed().collectLeaves())]
    except Exception as e:
        return f"view {name} kept: cannot inspect it ({_first_line(e, 150)})"
    if not leaves or not set(leaves) <= INLINE_LEAVES:
        return None                 # it reads files or tables already
    try:
        # one file keeps the rows in the order of the inline data (a scan orders files by size)
        df.coalesce(1).write.mode("overwrite").parquet(str(view_dir))
        files = session.read.parquet(str(view_dir))
        if is_global:
            files.createOrReplaceGlobalTempView(name)
        else:
            files.createOrReplaceTempView(name)
        return f"view {name} materialised as Parquet"
    except Exception as e:
        return f"view {name} kept over inline data: Parquet write failed ({_first_line(e, 150)})"


def _scala_list(seq):
    return [seq.apply(i) for i in range(seq.length())]


# ============================================================================ running files

class EventLog:
    """Append-only JSON lines: what a worker did so far, readable even after it was killed."""

    def __init__(self, path):
        self.path = Path(path)
        self._f = open(self.path, "a", encoding="utf-8")

    def write(self, **event):
        self._f.write(json.dumps(event) + "\n")
        self._f.flush()

    def close(self):
        self._f.close()


def _run_one_file(base, parsed, events, view_root, index):
    """Runs one parsed file in a fresh session and writes its events."""
    name = parsed["name"]
    events.write(ev="file_start", file=name, settings=parsed["settings"],
                 not_runnable=parsed["not_runnable"], statements=parsed["statements"])
    if parsed["not_runnable"]:
        events.write(ev="file_end", file=name, elapsed=0.0)
        return
    before = catalog_objects(base)
    session, setup_errors = new_file_session(base, parsed)
    start = time.monotonic()
    try:
        for i, sql in enumerate(parsed["statements"]):
            if time.monotonic() - start > FILE_BUDGET_S:
                events.write(ev="stmt", file=name, i=i,
                             result={"kind": "skipped", "reason": f"file time budget ({FILE_BUDGET_S} s) spent"})
                continue
            events.write(ev="stmt_start", file=name, i=i)
            result = run_statement(session, sql, f"sql-corpus-{index}-{i}")
            if result["kind"] == "answer":
                note = materialise_view(session, sql, view_root / f"{index}-{i}")
                if note:
                    result["note"] = note
            events.write(ev="stmt", file=name, i=i, result=result)
    finally:
        drop_new_objects(base, before)
        shutil.rmtree(view_root, ignore_errors=True)
        events.write(ev="file_end", file=name, elapsed=round(time.monotonic() - start, 3),
                     setup_errors=setup_errors)


def run_worker(names, events_path, sieve, inputs=INPUTS):
    """Runs the files in this process (one SparkContext), writing events to ``events_path``."""
    from pyspark import __version__ as pyspark_version
    workdir = Path(tempfile.mkdtemp(prefix="sql-corpus-"))
    events, inputs = EventLog(Path(events_path).resolve()), Path(inputs).resolve()
    # relative paths in the corpus (LOCATION 'loc1') then land here, not in the checkout, and the
    # vanilla and sieve processes running at once do not share them
    os.chdir(workdir)
    try:
        spark, jar_sha = build_session(sieve, workdir)
        events.write(ev="run_meta", sieve=sieve, pyspark=pyspark_version, jar_sha256=jar_sha,
                     conf=session_conf(sieve, "<workdir>"))
        create_builtin_tables(spark)
        for index, name in enumerate(names):
            _run_one_file(spark, parse_file(name, inputs), events, workdir / "views", index)
            create_builtin_tables(spark)     # no-op unless a file dropped one
        spark.stop()
    finally:
        events.close()
        shutil.rmtree(workdir, ignore_errors=True)


def run_files(files, out_json, sieve, inputs=INPUTS):
    """Runs ``files`` (names relative to ``inputs``) in this process with one SparkSession and writes
    the results to ``out_json``. Use the ``run`` CLI to get each side its own supervised process."""
    events_path = Path(str(out_json) + ".events")
    events_path.unlink(missing_ok=True)
    start = time.monotonic()
    run_worker(list(files), events_path, sieve, inputs)
    results = assemble(read_events(events_path), list(files), sieve)
    results["meta"]["elapsed"] = round(time.monotonic() - start, 1)
    _write_json(out_json, results)
    return results


def read_events(path):
    events = []
    if Path(path).exists():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:     # the last line of a killed worker
                pass
    return events


def assemble(events, names, sieve):
    """Results {"meta", "files": {name: {...}}} from events; a file the worker died in gets the
    statement it was running recorded as an error and the rest as skipped."""
    meta = {"sieve": sieve}
    files = {}
    for ev in events:
        kind = ev["ev"]
        if kind == "run_meta":
            meta.update({k: v for k, v in ev.items() if k != "ev"})
        elif kind == "file_start":
            files[ev["file"]] = {"not_runnable": ev["not_runnable"], "settings": ev["settings"],
                                 "sql": ev["statements"], "results": {}, "finished": False}
        elif kind == "stmt_start":
            files[ev["file"]]["running"] = ev["i"]
        elif kind == "stmt":
            files[ev["file"]]["results"][ev["i"]] = ev["result"]
        elif kind == "file_end":
            files[ev["file"]].update(finished=True, elapsed=ev["elapsed"],
                                     setup_errors=ev.get("setup_errors", []))
    out = {}
    for name in names:
        if name in files:
            out[name] = _finish_file(files[name])
    return {"meta": meta, "files": out}


def _finish_file(f):
    """One file's entry: statements in order, each with its SQL and result."""
    died_at = None if f["finished"] else f.get("running")
    statements_ = []
    for i, sql in enumerate(f["sql"]):
        if i in f["results"]:
            result = f["results"][i]
        elif i == died_at:
            result = {"kind": "error", "error": {"condition": "HARNESS_WORKER_DIED", "type": None,
                      "java_class": None, "root_cause": None,
                      "message": "the worker process died or hung while running this statement"}}
        else:
            result = {"kind": "skipped", "reason": "the worker died or hung earlier in this file"}
        statements_.append(dict(result, sql=sql))
    entry = {"not_runnable": f["not_runnable"], "settings": f["settings"], "statements": statements_,
             "elapsed": f.get("elapsed"), "setup_errors": f.get("setup_errors", [])}
    if f["not_runnable"]:
        entry["statements"] = []
        entry["statement_count"] = len(f["sql"])
    return entry


def _write_json(path, data):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)


# ============================================================================ the supervised run (CLI)

def supervise(names, out_json, sieve, inputs=INPUTS):
    """Runs ``names`` in worker processes (one at a time, one SparkContext each): a worker that dies
    or stops writing events for HANG_LIMIT_S is killed and a new one goes on after the file it was in.
    Progress goes to stderr; the worker's own output to ``out_json``.log."""
    side = "sieve" if sieve else "vanilla"
    events_path = Path(str(out_json) + ".events")
    events_path.unlink(missing_ok=True)
    log_path = Path(str(out_json) + ".log")
    start, remaining, restarts = time.monotonic(), list(names), 0
    progress = _Progress(names, side, start)
    with open(log_path, "w") as worker_log:
        while remaining:
            list_path = Path(str(out_json) + ".files")
            list_path.write_text("\n".join(remaining))
            cmd = [sys.executable, str(Path(__file__).resolve()), "worker", "--sieve", "on" if sieve else "off",
                   "--events", str(events_path), "--inputs", str(inputs), "--file-list", str(list_path)]
            proc = subprocess.Popen(cmd, stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                _watch(proc, events_path, progress)
            finally:             # also on SIGTERM / Ctrl-C: the worker is in its own process group
                _kill_group(proc)
            started = {e["file"] for e in read_events(events_path) if e["ev"] == "file_start"}
            left = [n for n in remaining if n not in started]
            if proc.returncode == 0 and not left:
                break
            log(f"{side}: worker ended with {proc.returncode} ({len(left)} files left; see {log_path})")
            restarts = 0 if len(left) < len(remaining) else restarts + 1
            if restarts >= 3:
                raise RuntimeError(f"{side}: the worker made no progress in 3 attempts; see {log_path}")
            remaining = left
    results = assemble(read_events(events_path), names, sieve)
    results["meta"]["elapsed"] = round(time.monotonic() - start, 1)
    _write_json(out_json, results)
    log(f"{side}: {len(names)} files in {_fmt_s(results['meta']['elapsed'])} -> {out_json}")
    return results


class _Progress:
    """What the supervisor has read of the events so far (kept across worker restarts)."""

    def __init__(self, names, side, start):
        self.names, self.side, self.start = names, side, start
        self.offset, self.done, self.per_file = 0, 0, Counter()

    def read_new(self, events_path):
        """Prints a line per file finished since the last call (reads only the new events)."""
        with open(events_path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[:chunk.rfind(b"\n") + 1]          # a line being written waits for next time
        self.offset += len(complete)
        for line in complete.decode("utf-8").splitlines():
            ev = json.loads(line)
            if ev["ev"] == "stmt":
                self.per_file[ev["file"]] += 1
            elif ev["ev"] == "file_end":
                self.done += 1
                log(f"{self.side}: file {self.done}/{len(self.names)} {ev['file']}: "
                    f"{self.per_file[ev['file']]} statements, {ev['elapsed']:.1f} s "
                    f"(elapsed {_fmt_s(time.monotonic() - self.start)})")


def _watch(proc, events_path, progress):
    """Waits for the worker, printing progress; kills it when it stops writing events."""
    while proc.poll() is None:
        time.sleep(1)
        if not events_path.exists():
            continue
        progress.read_new(events_path)
        if time.time() - events_path.stat().st_mtime > HANG_LIMIT_S:
            log(f"{progress.side}: no progress for {HANG_LIMIT_S} s: killing the worker")
            _kill_group(proc)
    if events_path.exists():
        progress.read_new(events_path)


def _kill_group(proc):
    """Kills the worker and the JVM it started (its own process group), also when the worker is
    already gone (its JVM may not be). A worker that ended well has nothing left to kill."""
    if proc.poll() == 0:
        return
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _fmt_s(seconds):
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


# ============================================================================ comparing

# SQLQueryTestHelper.replaceNotIncludedMsg, applied by Spark to every output line it compares:
# expression ids, plan ids, CTE ids and codegen stage ids vary with whatever ran before in the JVM
_SPARK_MASKS = [(re.compile(r"#\d+"), "#x"), (re.compile(r"plan_id=\d+"), "plan_id=x"),
                (re.compile(r"CTERelationDef \d+,"), "CTERelationDef xxxx,"),
                (re.compile(r"CTERelationRef \d+,"), "CTERelationRef xxxx,"),
                (re.compile(r"@\w*,"), "@xxxxxxxx,"), (re.compile(r"\*\(\d+\) "), "*")]


def _mask(v):
    if v is None:
        return None
    for pattern, replacement in _SPARK_MASKS:
        v = pattern.sub(replacement, v)
    return v


def _masked_rows(rec):
    """Rows with Spark's masks applied; sorted unless the query is sorted."""
    rows = [[_mask(v) for v in r] for r in rec["rows"]]
    return rows if rec["sorted"] else sorted(rows, key=json.dumps)


def _is_float_type(t):
    return t in ("float", "double")


def _norm_rows(rec):
    """Rows as tuples, FLOAT/DOUBLE values to 10 significant digits; sorted unless the query is."""
    floats = [i for i, t in enumerate(rec.get("types", [])) if _is_float_type(t)]
    rows = []
    for r in rec["rows"]:
        r = [_mask(v) for v in r]
        for i in floats:
            r[i] = _norm_float(r[i])
        rows.append(tuple(r))
    return rows if rec["sorted"] else sorted(rows, key=lambda r: json.dumps(r))


def _norm_float(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return v if math.isnan(f) or math.isinf(f) else f"{f:.9e}"


def same_outcome(a, b):
    """(equal, how): how is 'exact', 'float tolerance' or why they differ."""
    if a["kind"] != b["kind"]:
        return False, "answer vs error"
    if a["kind"] == "error":
        ka = (a["error"]["condition"], a["error"]["java_class"] or a["error"]["type"])
        kb = (b["error"]["condition"], b["error"]["java_class"] or b["error"]["type"])
        return (True, "same error") if ka == kb else (False, "different errors")
    if a["schema"] != b["schema"]:
        return False, "different schemas"
    if a.get("truncated") or b.get("truncated"):
        same = a["row_count"] == b["row_count"] and a["digest"] == b["digest"]
        return (True, "exact") if same else (False, "different rows (large answer, by digest)")
    if _masked_rows(a) == _masked_rows(b):
        return True, "exact"
    if _norm_rows(a) == _norm_rows(b):
        return True, "float tolerance"
    if a["sorted"] and sorted(_masked_rows(a), key=json.dumps) == sorted(_masked_rows(b), key=json.dumps):
        return False, "same rows, different order under ORDER BY"
    return False, "different rows"


def summarize(rec, other=None, limit=5):
    """A short text of one outcome; for answers that differ, the rows only on this side."""
    if rec["kind"] == "skipped":
        return f"skipped: {rec['reason']}"
    if rec["kind"] == "error":
        e = rec["error"]
        cause = f" [cause {e['root_cause']}]" if e.get("root_cause") else ""
        return f"error {e['condition'] or '-'} ({e['java_class'] or e['type']}): {e['message']}{cause}"
    text = f"{rec['row_count']} rows{' (ordered)' if rec['sorted'] else ''}, {rec['schema']}"
    if other is not None and other["kind"] == "answer" and not rec.get("truncated"):
        only = Counter(map(json.dumps, _masked_rows(rec))) - Counter(map(json.dumps, _masked_rows(other)))
        rows = list(only.elements())
        if rows:
            text += f"; {len(rows)} rows only here, e.g. " + "; ".join(rows[:limit])
    elif rec["rows"]:
        text += "; e.g. " + "; ".join(json.dumps(r) for r in rec["rows"][:limit])
    return text


def hint(sql, how):
    """Why a difference may be legal; shown next to it, never used to drop it."""
    s = sql.upper()
    if how == "same rows, different order under ORDER BY":
        return "ties in ORDER BY may come in any order"
    if re.search(r"\bLIMIT\b|\bOFFSET\b|TABLESAMPLE", s) and how == "different rows":
        return "LIMIT/OFFSET/TABLESAMPLE: which rows is up to the plan unless the order is total"
    if s.startswith("EXPLAIN"):
        return "EXPLAIN prints the plan, which sieve changes"
    return None


def error_reason(rec):
    e = rec["error"]
    return e["condition"] or e["java_class"] or e["type"]


def compare(vanilla, sieve):
    """Differences between two runs' results (dicts or JSON paths). Returns a dict: ``differences``,
    ``not_runnable`` (files and statements that ran on neither side, with the reason), ``counts``."""
    vanilla, sieve = _load(vanilla), _load(sieve)
    differences, not_runnable, notes = [], [], []
    counts = Counter()
    for name in sorted(set(vanilla["files"]) | set(sieve["files"])):
        fv, fs = vanilla["files"].get(name), sieve["files"].get(name)
        counts["files"] += 1
        if fv is None or fs is None:
            not_runnable.append({"file": name, "index": None, "sql": None,
                                 "reason": f"ran only with sieve {'on' if fv is None else 'off'}"})
            continue
        if fv["not_runnable"]:
            counts["files_not_runnable"] += 1
            counts["statements_not_runnable"] += fv.get("statement_count", 0)
            not_runnable.append({"file": name, "index": None, "sql": None, "reason": fv["not_runnable"],
                                 "statements": fv.get("statement_count", 0)})
            continue
        counts["files_run"] += 1
        _compare_file(name, fv, fs, counts, differences, not_runnable, notes)
    return {"differences": differences, "nondeterministic": [], "not_runnable": not_runnable,
            "notes": notes, "counts": dict(counts),
            "time": {"vanilla_s": vanilla["meta"].get("elapsed"), "sieve_s": sieve["meta"].get("elapsed")},
            "jars": {"vanilla": vanilla["meta"].get("jar_sha256"), "sieve": sieve["meta"].get("jar_sha256")}}


def _compare_file(name, fv, fs, counts, differences, not_runnable, notes):
    for i, (v, s) in enumerate(zip(fv["statements"], fs["statements"])):
        counts["statements"] += 1
        for side, rec in (("vanilla", v), ("sieve", s)):
            if rec.get("note") and "materialised" not in rec["note"]:
                notes.append({"file": name, "index": i, "side": side, "note": rec["note"]})
        if v["kind"] == "skipped" or s["kind"] == "skipped":
            counts["statements_skipped"] += 1
            reason = v.get("reason") if v["kind"] == "skipped" else s.get("reason")
            not_runnable.append({"file": name, "index": i, "sql": v["sql"], "reason": f"skipped: {reason}"})
            continue
        counts["statements_compared"] += 1
        counts["sieve_plans_with_dynamic_filter"] += bool(s.get("dynamic_filter"))
        counts["vanilla_plans_with_dynamic_filter"] += bool(v.get("dynamic_filter"))
        equal, how = same_outcome(v, s)
        if equal:
            counts["equal_" + how.replace(" ", "_")] += 1
            if v["kind"] == "error":
                not_runnable.append({"file": name, "index": i, "sql": v["sql"], "reason": error_reason(v),
                                     "message": v["error"]["message"]})
            continue
        differences.append({"file": name, "index": i, "sql": v["sql"], "how": how, "hint": hint(v["sql"], how),
                            "vanilla": summarize(v, s), "sieve": summarize(s, v)})


def _load(x):
    if isinstance(x, (str, Path)):
        return json.loads(Path(x).read_text(encoding="utf-8"))
    return x


def rerun_vanilla(comparison, vanilla, out_json, inputs=INPUTS):
    """Re-runs (sieve off, a new process) the files that hold differences; a difference whose vanilla
    outcome changes between the two vanilla runs moves to ``nondeterministic``. Returns comparison."""
    vanilla = _load(vanilla)
    files = sorted({d["file"] for d in comparison["differences"]})
    if not files:
        return comparison
    log(f"re-running {len(files)} files with sieve off to tell nondeterminism from differences")
    cmd = [sys.executable, str(Path(__file__).resolve()), "run", "--sieve", "off", "--out", str(out_json),
           "--inputs", str(inputs), *files]
    subprocess.run(cmd, check=True)
    again = _load(out_json)
    kept, moved = [], []
    for d in comparison["differences"]:
        v1 = vanilla["files"][d["file"]]["statements"][d["index"]]
        v2 = again["files"].get(d["file"], {}).get("statements", [])
        v2 = v2[d["index"]] if d["index"] < len(v2) else None
        if v2 is not None and v2["kind"] != "skipped" and not same_outcome(v1, v2)[0]:
            moved.append(dict(d, vanilla_again=summarize(v2, v1)))
        else:
            kept.append(d)
    comparison["differences"], comparison["nondeterministic"] = kept, moved
    comparison["counts"]["differences"] = len(kept)
    comparison["counts"]["nondeterministic_in_vanilla"] = len(moved)
    comparison["time"]["rerun_s"] = again["meta"].get("elapsed")
    return comparison


# ============================================================================ the report

def report(comparison, wall_s=None):
    """The comparison as text: counts, then every difference, nondeterministic statement and reason."""
    c, t = comparison["counts"], comparison["time"]
    diffs, nondet = comparison["differences"], comparison["nondeterministic"]
    lines = [
        "spark-sieve vs vanilla Spark on Spark's SQL golden-file inputs",
        f"files: {c.get('files', 0)} ({c.get('files_run', 0)} run, {c.get('files_not_runnable', 0)} not runnable)",
        f"statements: {c.get('statements', 0)} in files run, {c.get('statements_compared', 0)} compared "
        f"({c.get('equal_exact', 0)} equal, {c.get('equal_float_tolerance', 0)} equal within float tolerance, "
        f"{c.get('equal_same_error', 0)} the same error on both sides), "
        f"{c.get('statements_skipped', 0)} skipped, {c.get('statements_not_runnable', 0)} in files not run",
        f"plans holding a dynamic filter: {c.get('sieve_plans_with_dynamic_filter', 0)} with sieve on, "
        f"{c.get('vanilla_plans_with_dynamic_filter', 0)} with it off",
        f"differences: {len(diffs)}; nondeterministic in vanilla: {len(nondet)}",
        f"time: vanilla {_fmt_s(t.get('vanilla_s') or 0)}, sieve {_fmt_s(t.get('sieve_s') or 0)}"
        + (f", vanilla re-run {_fmt_s(t['rerun_s'])}" if t.get("rerun_s") else "")
        + (f", wall {_fmt_s(wall_s)}" if wall_s else ""),
    ]
    if comparison["jars"]["vanilla"]:
        lines.append("WARNING: the vanilla run loaded a spark-sieve jar: it was not plain Spark")
    lines += ["", f"== differences ({len(diffs)})"] + [_fmt_diff(d) for d in diffs]
    lines += ["", f"== nondeterministic in vanilla ({len(nondet)}): vanilla disagreed with itself"]
    lines += [_fmt_diff(d) + f"\n    vanilla again: {d['vanilla_again']}" for d in nondet]
    lines += ["", "== not runnable on either side, by reason"] + _fmt_not_runnable(comparison["not_runnable"])
    if comparison["notes"]:
        lines += ["", f"== temp views kept over inline data ({len(comparison['notes'])})"]
        lines += [f"  {n['file']} #{n['index']} ({n['side']}): {n['note']}" for n in comparison["notes"]]
    return "\n".join(lines) + "\n"


def _fmt_diff(d):
    sql = " ".join(d["sql"].split())
    out = (f"- {d['file']} #{d['index']}: {d['how']}{' (' + d['hint'] + ')' if d.get('hint') else ''}\n"
           f"    sql: {sql[:400]}\n    vanilla: {d['vanilla'][:600]}\n    sieve:   {d['sieve'][:600]}")
    return out


def _fmt_not_runnable(items):
    by_reason = defaultdict(list)
    for item in items:
        by_reason[item["reason"]].append(item)
    lines = []
    for reason, group in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        files = [g for g in group if g["index"] is None]
        what = (f"{len(files)} files ({sum(g.get('statements', 0) for g in files)} statements)" if files
                else f"{len(group)} statements")
        lines.append(f"  {reason}: {what}")
        for g in group[:3]:
            where = g["file"] if g["index"] is None else f"{g['file']} #{g['index']}"
            lines.append(f"      e.g. {where}" + (f": {g['message'][:160]}" if g.get("message") else ""))
    return lines


# ============================================================================ CLI

def _cmd_run(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # unwinds supervise(), killing the worker
    names = list_files(args.files, Path(args.inputs))
    if not names:
        sys.exit(f"no input files match {args.files} under {args.inputs}")
    supervise(names, args.out, args.sieve == "on", Path(args.inputs))


def _cmd_worker(args):
    names = Path(args.file_list).read_text().split("\n")
    run_worker([n for n in names if n], args.events, args.sieve == "on", Path(args.inputs))


def _cmd_compare(args):
    start = time.monotonic()
    comparison = compare(args.vanilla, args.sieve)
    if not args.no_rerun:
        rerun_vanilla(comparison, args.vanilla, args.rerun_out or str(args.vanilla) + ".rerun.json",
                      Path(args.inputs))
    comparison["counts"]["differences"] = len(comparison["differences"])
    text = report(comparison, wall_s=args.wall_s)
    if args.report:
        Path(args.report).write_text(text, encoding="utf-8")
    if args.json:
        _write_json(args.json, comparison)
    print(text, end="")
    log(f"compared in {_fmt_s(time.monotonic() - start)}")
    sys.exit(1 if comparison["differences"] else 0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run input files with sieve on or off (a supervised worker)")
    run.add_argument("--sieve", choices=("on", "off"), required=True)
    run.add_argument("--out", required=True)
    run.add_argument("--inputs", default=str(INPUTS))
    run.add_argument("files", nargs="*", help="names or globs relative to the inputs root")
    worker = sub.add_parser("worker", help=argparse.SUPPRESS)
    worker.add_argument("--sieve", choices=("on", "off"), required=True)
    worker.add_argument("--events", required=True)
    worker.add_argument("--inputs", default=str(INPUTS))
    worker.add_argument("--file-list", required=True)
    cmp_ = sub.add_parser("compare", help="compare two runs; exit 1 on differences")
    cmp_.add_argument("vanilla")
    cmp_.add_argument("sieve")
    cmp_.add_argument("--report", help="also write the text report here")
    cmp_.add_argument("--json", help="also write the comparison as JSON here")
    cmp_.add_argument("--no-rerun", action="store_true", help="skip the vanilla re-run of differences")
    cmp_.add_argument("--rerun-out", help="where the vanilla re-run writes (default VANILLA.rerun.json)")
    cmp_.add_argument("--inputs", default=str(INPUTS))
    cmp_.add_argument("--wall-s", type=float, help="wall time of the whole run, for the report")
    args = p.parse_args(argv)
    {"run": _cmd_run, "worker": _cmd_worker, "compare": _cmd_compare}[args.cmd](args)


if __name__ == "__main__":
    main()
