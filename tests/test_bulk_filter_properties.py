"""Property-based test of bulk filters: random AND/OR trees of include/exclude leaves over random data
with NULLs and duplicate rows, each answer checked (as a multiset of rows) against DuckDB evaluating
the same tree as EXISTS / NOT EXISTS SQL over the same value files: an engine that shares no code with
Spark. A plain-Python evaluation of the tree checks the DuckDB translation itself."""

import os
import shutil
import tempfile
from collections import Counter

import duckdb
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import spark_sieve as sieve
from plans import bulk_filter_lowered, logical_plans

COLUMNS = ("k0", "k1", "k2")
SCHEMA = ", ".join(f"{c} INT" for c in COLUMNS)
MAX_DEPTH = 4          # a leaf alone is depth 1; an AND/OR whose children are leaves is depth 2

small = st.integers(min_value=0, max_value=9)
cell = st.one_of(st.none(), small)
row = st.tuples(cell, cell, cell)

# A tree is pure data so that hypothesis can shrink it:
#   ("include" | "exclude", column, [values...])      values: 0-5 ints of 0..9, repeats allowed
#   ("and" | "or", [children...])                      1-4 children
leaf = st.tuples(st.sampled_from(["include", "exclude"]), st.sampled_from(COLUMNS),
                 st.lists(small, min_size=0, max_size=5))


def trees(depth=MAX_DEPTH):
    """Trees of depth 1..depth; below the top, a subtree is an AND/OR twice as often as a leaf."""
    if depth == 1:
        return leaf
    node = st.tuples(st.sampled_from(["and", "or"]), st.lists(trees(depth - 1), min_size=1, max_size=4))
    return st.one_of(leaf, node, node)


@st.composite
def tables(draw):
    """Up to 60 rows: up to 40 drawn rows, then up to 20 copies of some of them, shuffled. (The length
    is drawn uniformly: hypothesis alone favours very short lists.)"""
    n = draw(st.integers(min_value=0, max_value=40))
    base = draw(st.lists(row, min_size=n, max_size=n))
    copies = draw(st.lists(st.sampled_from(base), max_size=20)) if base else []
    return draw(st.permutations(base + copies))


def _leaves(tree):
    return [tree] if tree[0] in ("include", "exclude") else [l for c in tree[1] for l in _leaves(c)]


def _write_files(tree, directory):
    """One text value file per leaf, one value a line; an empty value list is an empty file."""
    paths = []
    for i, (_, _, values) in enumerate(_leaves(tree)):
        path = os.path.join(directory, f"leaf{i}.txt")
        with open(path, "w") as f:
            f.write("".join(f"{v}\n" for v in values))
        paths.append(path)
    return paths


def _build(tree, paths):
    """The spark_sieve tree, leaves taking their files in order."""
    it = iter(paths)

    def go(node):
        if node[0] in ("include", "exclude"):
            return (sieve.include if node[0] == "include" else sieve.exclude)(node[1], next(it))
        return (sieve.all_of if node[0] == "and" else sieve.any_of)(*(go(c) for c in node[1]))

    return go(tree)


def _sql(tree, paths):
    """The tree as a DuckDB WHERE clause over table t."""
    it = iter(paths)

    def go(node):
        if node[0] in ("include", "exclude"):
            path = next(it).replace("'", "''")
            test = (f"EXISTS (SELECT 1 FROM read_csv('{path}', header=false, columns={{'value': 'INTEGER'}}) v "
                    f"WHERE v.value = t.{node[1]})")
            return test if node[0] == "include" else f"NOT {test}"
        joiner = " AND " if node[0] == "and" else " OR "
        return "(" + joiner.join(go(c) for c in node[1]) + ")"

    return go(tree)


def _python_eval(tree, r):
    if tree[0] in ("include", "exclude"):
        key = r[COLUMNS.index(tree[1])]
        hit = key is not None and key in tree[2]
        return hit if tree[0] == "include" else not hit
    parts = (_python_eval(c, r) for c in tree[1])
    return all(parts) if tree[0] == "and" else any(parts)


def _duckdb_rows(rows, where):
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE t ({', '.join(f'{c} INTEGER' for c in COLUMNS)})")
        if rows:
            con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        return Counter(con.execute(f"SELECT {', '.join(COLUMNS)} FROM t WHERE {where}").fetchall())
    finally:
        con.close()


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=trees(), rows=tables())
def test_random_trees_agree_with_duckdb(spark, tree, rows):
    directory = tempfile.mkdtemp(prefix="sieve-props-")
    try:
        paths = _write_files(tree, directory)
        sieve_tree = _build(tree, paths)
        where = _sql(tree, paths)
        note(f"tree: {sieve_tree!r}")
        note(f"values: {[l[2] for l in _leaves(tree)]}")
        note(f"duckdb WHERE: {where}")

        expected = _duckdb_rows(rows, where)
        model = Counter(r for r in rows if _python_eval(tree, r))
        assert expected == model, f"test bug: DuckDB SQL disagrees with the Python model: {expected} vs {model}"

        df = spark.createDataFrame(rows, SCHEMA)
        filtered = sieve_tree.apply(df)
        actual = Counter(tuple(r) for r in filtered.collect())
        assert actual == expected, (f"spark-sieve vs DuckDB: extra {dict(actual - expected)}, "
                                    f"missing {dict(expected - actual)}")
        assert bulk_filter_lowered(filtered), logical_plans(filtered)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
