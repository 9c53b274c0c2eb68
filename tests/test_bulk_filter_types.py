"""Bulk filters on every kind of key column, both ways a tree runs (value sets, and joins with
maxSetBytes=0), each answer against plain Spark's EXISTS / NOT EXISTS formulation in a session without the
extension (conftest's `vanilla`): Spark's own `=` decides
what matches (NaN = NaN, -0.0 = 0.0, collations), NULL keys are in no set."""

import re

import pytest

import spark_sieve as sieve
from answers import diff_answers
from plans import bulk_filter_lowered, logical_plans
from reference import exists_query
from spark_line import COLLATIONS, NEEDS_COLLATIONS

ALWAYS_JOINS = "spark.sieve.bulkFilter.maxSetBytes"

# column: (SQL type, the rows' values, the value source's values) — NULLs and repeats on both sides
KEYS = {
    "s": ("STRING", ["'a'", "'b'", "''", "'é'", "NULL"], ["'a'", "'é'", "NULL", "'zz'"]),
    "lc": ("STRING COLLATE UTF8_LCASE", ["'Abc'", "'x'", "'ABC'", "NULL"], ["'abc'"]),
    "d": ("DATE", ["DATE'2024-01-01'", "DATE'1999-12-31'", "NULL"], ["DATE'2024-01-01'", "DATE'2030-01-01'"]),
    "ts": ("TIMESTAMP", ["TIMESTAMP'2024-01-01 10:00:00'", "TIMESTAMP'2024-01-01 10:00:01'", "NULL"],
           ["TIMESTAMP'2024-01-01 10:00:00'"]),
    "ntz": ("TIMESTAMP_NTZ", ["TIMESTAMP_NTZ'2024-01-01 10:00:00'", "NULL"], ["TIMESTAMP_NTZ'2024-01-01 10:00:00'"]),
    "dec": ("DECIMAL(30,3)", ["1.5", "123456789012345678901.125", "-2", "NULL"], ["1.500", "123456789012345678901.125"]),
    "dsm": ("DECIMAL(9,2)", ["1.5", "2.25", "-3", "NULL"], ["1.50", "-3"]),
    "b": ("BOOLEAN", ["true", "false", "NULL"], ["true"]),
    "bin": ("BINARY", ["X'00'", "X'0102'", "X''", "NULL"], ["X'0102'", "X''"]),
    "l": ("BIGINT", ["9223372036854775807", "-9223372036854775808", "0", "NULL"], ["9223372036854775807", "0"]),
    "sh": ("SMALLINT", ["1", "-32768", "7", "NULL"], ["-32768", "7"]),
    "i": ("INT", ["1", "2", "1000000", "NULL"], ["2", "1000000", "5"]),
    "f": ("DOUBLE", ["0.0", "-0.0", "double('NaN')", "1.5", "NULL"], ["-0.0", "double('NaN')"]),
    "r": ("FLOAT", ["float(0.0)", "float('NaN')", "float(2.5)", "NULL"], ["float(-0.0)", "float(2.5)"]),
}


def _column(values, type_, n):
    """`n` rows cycling through `values`, as a SQL expression over `id`."""
    cases = " ".join(f"WHEN {i} THEN CAST({v} AS {type_})" for i, v in enumerate(values))
    return f"CASE id % {len(values)} {cases} END"


# the key types this Spark has (no collated strings before 4.0)
HERE = {name: key for name, key in KEYS.items() if COLLATIONS or "COLLATE" not in key[0]}


def _key_params():
    return [pytest.param(name, marks=() if name in HERE else NEEDS_COLLATIONS) for name in KEYS]


TABLE_ROWS = 65


@pytest.fixture(scope="module")
def table(spark):
    # 60 rows; each column cycles through its values at its own period, so rows mix them; 5 repeated
    exprs = [f"{_column(rows, type_, 60)} AS {name}" for name, (type_, rows, _) in HERE.items()]
    return spark.range(60).selectExpr("id", *exprs).union(spark.range(TABLE_ROWS - 60).selectExpr("id", *exprs))


@pytest.fixture(scope="module")
def sources(spark, tmp_path_factory):
    """Each key's values as a parquet file of the key's own type."""
    d = tmp_path_factory.mktemp("typed_values")
    paths = {}
    for name, (type_, _, values) in HERE.items():
        rows = " UNION ALL ".join(f"SELECT CAST({v} AS {type_}) AS v" for v in values)
        paths[name] = str(d / f"{name}.parquet")
        spark.sql(rows).coalesce(1).write.parquet(paths[name])
    return paths


def _run(spark, vanilla, table, tree, joins):
    """The tree's rows over ``table``, once they equal vanilla's EXISTS / NOT EXISTS answer and the plan shows the
    tree lowered (to a SetFilter, or to joins with ``joins``)."""
    if joins:
        spark.conf.set(ALWAYS_JOINS, "0")
    try:
        df = tree.apply(table)
        rows = df.collect()
        diff = diff_answers(exists_query(vanilla, table, tree).collect(), rows)
        assert diff is None, f"differs from EXISTS/NOT EXISTS (missing, extra): {diff}"
        assert bulk_filter_lowered(df), logical_plans(df)
        optimized = logical_plans(df)[1]
        assert ("SetFilter" in optimized) != joins, optimized
        return rows
    finally:
        spark.conf.unset(ALWAYS_JOINS)


@pytest.mark.parametrize("joins", [False, True], ids=["sets", "joins"])
@pytest.mark.parametrize("name", _key_params())
def test_include_and_exclude_on_each_key_type(spark, vanilla, table, sources, name, joins):
    inc = _run(spark, vanilla, table, sieve.include(name, sources[name]), joins)
    exc = _run(spark, vanilla, table, sieve.exclude(name, sources[name]), joins)
    assert inc and exc      # both sides of each leaf are exercised
    assert len(inc) + len(exc) == TABLE_ROWS


def test_every_key_type_in_one_tree(spark, vanilla, table, sources):
    names = list(HERE)  # every key type this Spark has
    tree = sieve.any_of(*[sieve.all_of(sieve.include(a, sources[a]), sieve.exclude(b, sources[b]))
                          for a, b in zip(names, names[1:] + names[:1])])
    for joins in (False, True):
        _run(spark, vanilla, table, tree, joins)


def test_oversized_sources_are_joined_and_the_rest_are_sets(spark, vanilla, table, sources, tmp_path):
    """A column whose sources are above maxSetBytes keeps a join; the others are tested in one SetFilter
    that also reads the joined leaves; explain says which is which."""
    big = tmp_path / "big_ints.txt"
    big.write_text("".join(f"{v}\n" for v in range(0, 200_000, 7)) + "2\n")   # ~1.3 MB
    tree = sieve.any_of(sieve.all_of(sieve.include("i", str(big)), sieve.exclude("s", sources["s"])),
                        sieve.include("d", sources["d"]))
    spark.conf.set(ALWAYS_JOINS, "100k")
    try:
        df = tree.apply(table)
        diff = diff_answers(exists_query(vanilla, table, tree).collect(), df.collect())
        assert diff is None, diff
        assert bulk_filter_lowered(df), logical_plans(df)
        optimized = logical_plans(df)[1]
        assert optimized.count("SetFilter") == 1 and "3 leaves: 2 in value sets, 1 joined" in optimized, optimized
        text = sieve.explain(df, print_it=False)
        sets = re.search(r"value sets: (.*)", text).group(1)   # in the cost model's order
        assert sorted(sets.split(", ")) == ["d (1 leaves)", "s (1 leaves)"], text
        assert "joins:      i (1 leaves, " in text, text
    finally:
        spark.conf.unset(ALWAYS_JOINS)
