"""Apache Spark's own SQL golden-file inputs about joins, subqueries and set operations: every
statement's outcome with spark-sieve on (dynamic filters forced onto every allowed join) equals vanilla
Spark's. tests/sql_corpus.py is the harness (parsing as SQLQueryTestSuite does, temp views over inline
data rewritten as Parquet so joins scan files, comparison); dev/sql-corpus runs the whole corpus.

The inputs come from Spark's spark-sql test jar through dev/sql-corpus-fetch (cached under
``.cache/sql-corpus``). Each side runs in its own process and JVM, both at once; a statement that
differs is re-run with sieve off in a third process and, when vanilla disagrees with itself, reported
as nondeterministic rather than failing the test.

Which files: the whole join/subquery/set-operation part of the corpus (about 60 files, 1,800
statements) takes some 26 minutes per side on a 2-core machine, so this test runs a representative
slice of it, ``SLICE`` (about 420 statements, some 7 minutes): IN / NOT IN / EXISTS subqueries in joins,
in join conditions, over CTEs and set operations, with their NULL semantics and count bugs; scalar
subqueries in predicates; natural, USING, inner, outer, empty-relation joins; EXCEPT, INTERSECT ALL,
UNION. Left out for time: ``join-lateral.sql``, ``postgreSQL/join.sql``, ``postgreSQL/union.sql``,
``order-by-and-having-on-top-of-aggregate-with-join.sql``, the rest of ``subquery/**``
(``dev/sql-corpus 'subquery/**' '*join*.sql'`` runs them).
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest

import sql_corpus

REPO = Path(__file__).resolve().parent.parent
SCRIPT = Path(sql_corpus.__file__).resolve()

SLICE = [
    "subquery/in-subquery/in-joins.sql",
    "subquery/in-subquery/not-in-joins.sql",
    "subquery/in-subquery/nested-not-in.sql",
    "subquery/in-subquery/in-null-semantics.sql",
    "subquery/exists-subquery/exists-cte.sql",
    "subquery/exists-subquery/exists-joins-and-set-ops.sql",
    "subquery/exists-subquery/exists-in-join-condition.sql",
    "natural-join.sql",
    "using-join.sql",
    "inner-join.sql",
    "outer-join.sql",
    "except.sql",
    "intersect-all.sql",
    "union.sql",
]
MIN_COMPARED = 300            # statements compared: the slice holds 333; fewer means the harness lost some
MIN_DYNAMIC_FILTERS = 50      # sieve plans holding a dynamic filter: else the comparison proves little
RUN_TIMEOUT_S = 1700


@pytest.fixture(scope="module")
def corpus():
    """The inputs, fetched on first use (a no-op once there)."""
    subprocess.run([str(REPO / "dev" / "sql-corpus-fetch")], check=True, timeout=600)
    missing = [f for f in SLICE if not (sql_corpus.INPUTS / f).is_file()]
    assert not missing, f"not in the fetched corpus: {missing}"
    return sql_corpus.INPUTS


def _run_both(tmp_path, files):
    """Vanilla and sieve, each in its own process (and JVM), at the same time."""
    outs, procs = {}, {}
    for side in ("off", "on"):
        outs[side] = tmp_path / f"sieve-{side}.json"
        cmd = [sys.executable, str(SCRIPT), "run", "--sieve", side, "--out", str(outs[side]), *files]
        procs[side] = subprocess.Popen(cmd)
    try:
        for side, proc in procs.items():
            assert proc.wait(timeout=RUN_TIMEOUT_S) == 0, f"the sieve-{side} run failed; see {outs[side]}.log"
    finally:                      # a failure or a pytest timeout must not leave JVMs running
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
    return outs["off"], outs["on"]


@pytest.mark.timeout(1800)      # ~7 minutes alone on 2 cores; far more when the machine is shared
def test_sieve_matches_vanilla_on_spark_sql_tests(tmp_path, corpus):
    start = time.monotonic()
    vanilla, sieve = _run_both(tmp_path, SLICE)
    comparison = sql_corpus.compare(vanilla, sieve)
    sql_corpus.rerun_vanilla(comparison, vanilla, tmp_path / "vanilla-rerun.json")
    text = sql_corpus.report(comparison, wall_s=time.monotonic() - start)
    print("\n" + text)
    counts = comparison["counts"]
    assert counts.get("statements_compared", 0) >= MIN_COMPARED, text
    assert counts.get("sieve_plans_with_dynamic_filter", 0) >= MIN_DYNAMIC_FILTERS, text
    assert counts.get("vanilla_plans_with_dynamic_filter", 0) == 0, text
    assert not comparison["differences"], text
