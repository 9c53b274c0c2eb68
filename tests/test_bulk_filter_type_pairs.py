"""A bulk filter compares its key column with values of any type as Spark's own `key = value` does: for every
pair of (key column type, value type), include and exclude against plain Spark's EXISTS / NOT EXISTS over the
same files in a session without the extension (conftest's `vanilla`) — the same rows, or where Spark fails, a
failure: an analysis error as a `ColumnError` at `apply()`, a value or key that does not cast at run time.

Both sides come from one pool of strings, each cast into each type (`try_cast`), so that values of one type
meet keys of another (`1.005` as text against the DECIMAL(4,2) key 1.01, `3000000000` against INT keys, a
DATE against a TIMESTAMP...). A STRING side is restricted to the strings that cast into the other side's type
(the rest fail under ANSI, in both: tested apart), and STRING values are a text file, read by spark-sieve
itself into its value sets (and by a join with `maxSetBytes=0`). One query tests a key type against every value
type (but a STRING key's, whose casts differ per value type): the input holds a copy of the rows per value type
(column `vt`), and the tree is an OR of `vt = i AND leaf(values of type i)`."""

import pytest
from pyspark.errors import AnalysisException

import spark_sieve as sieve
from plans import bulk_filter_lowered, logical_plans

TYPES = ["STRING", "INT", "BIGINT", "SMALLINT", "DECIMAL(4,2)", "DOUBLE", "FLOAT", "DATE", "TIMESTAMP",
         "TIMESTAMP_NTZ", "BOOLEAN", "BINARY"]
POOL = ["0", "1", "2", "-7", "1.5", "1.01", "1.005", "3000000000", "2024-01-01", "2024-01-01 10:00:00", "true",
        "false", "abc"]
ALWAYS_JOINS = "spark.sieve.bulkFilter.maxSetBytes"
ANSI = "spark.sql.ansi.enabled"


def col(t):
    return "c_" + "".join(ch for ch in t.lower() if ch.isalnum())


def casts(s, t):
    """SQL: whether the string `s` casts into type `t`."""
    return f"try_cast({s} AS {t}) IS NOT NULL"


@pytest.fixture(scope="module")
def files(spark, tmp_path_factory):
    """The input (one row per pool string, one column per type, the string cast into it; and a row of NULLs) as
    parquet; each type's values (the pool cast into it, NULLs dropped) as parquet; each value type's index as a
    text file (the `vt` leaves)."""
    d = tmp_path_factory.mktemp("type_pairs")
    pool = spark.createDataFrame([(i, p) for i, p in enumerate(POOL)] + [(len(POOL), None)], "id INT, p STRING")
    pool.selectExpr("id", *[f"try_cast(p AS {t}) AS {col(t)}" for t in TYPES]).coalesce(1) \
        .write.parquet(str(d / "input"))
    values = {}
    for t in TYPES[1:]:
        values[t] = str(d / f"{col(t)}.parquet")
        pool.selectExpr(f"try_cast(p AS {t}) AS value").where("value IS NOT NULL").distinct().coalesce(1) \
            .write.parquet(values[t])
    for i, _ in enumerate(TYPES):
        (d / f"vt{i}.txt").write_text(f"{i}\n")
    return d, values


def text_values(spark, d, key_type):
    """The pool's strings that cast into `key_type` (all of them for a STRING key), as a text file."""
    kept = [r.p for r in spark.createDataFrame([(p,) for p in POOL], "p STRING")
            .where(casts("p", key_type) if key_type != "STRING" else "true").collect()]
    path = d / f"strings_for_{col(key_type)}.txt"
    path.write_text("".join(f"{p}\n" for p in kept))
    return str(path)


def reference(vanilla, input_path, key, values_path, include):
    """Plain Spark's EXISTS / NOT EXISTS of `key` = the values, as ids; or the exception it raises, and where."""
    _view(vanilla, "pair_input", input_path)
    _view(vanilla, "pair_values", values_path)
    try:
        df = vanilla.sql(f"SELECT id FROM pair_input t WHERE {'' if include else 'NOT'} EXISTS "
                         f"(SELECT 1 FROM pair_values v WHERE v.value = t.{key})")
    except AnalysisException as e:
        return "analysis", e
    try:
        return "rows", sorted(r.id for r in df.collect())
    except Exception as e:  # noqa: BLE001 - any run-time failure of Spark's own `=`
        return "run", e


def check(spark, vanilla, input_df, input_path, key, values_path):
    """One leaf, include and exclude, against the reference: rows, or the same kind of failure."""
    for include in (True, False):
        kind, expected = reference(vanilla, input_path, key, values_path, include)
        leaf = (sieve.include if include else sieve.exclude)(key, values_path)
        if kind == "analysis":
            with pytest.raises(sieve.ColumnError, match=f"column '{key}'.*cannot be compared"):
                leaf.apply(input_df)
            continue
        df = leaf.apply(input_df)
        assert bulk_filter_lowered(df), logical_plans(df)
        if kind == "run":
            with pytest.raises(Exception, match="CAST_INVALID_INPUT|cannot be cast"):
                df.collect()
            continue
        got = sorted(r.id for r in df.select("id").collect())
        assert got == expected, f"{'include' if include else 'exclude'}: Spark's EXISTS keeps ids {expected}"


def _values_path(spark, d, values, key_type, value_type):
    return text_values(spark, d, key_type) if value_type == "STRING" else values[value_type]


def _view(session, name, path):
    fmt = "text" if path.endswith(".txt") else "parquet"
    session.read.format(fmt).load(path).createOrReplaceTempView(name)


@pytest.mark.parametrize("key_type", [t for t in TYPES if t != "STRING"])
def test_a_key_against_values_of_every_type_is_spark_equality(spark, vanilla, files, key_type):
    """Include and exclude of a `key_type` key against values of each type, in one tree each (`vt = i AND leaf`),
    against plain Spark's EXISTS / NOT EXISTS of each value type; the pairs Spark refuses to compare are a
    `ColumnError` at apply()."""
    d, values = files
    key = col(key_type)
    paths = {v: _values_path(spark, d, values, key_type, v) for v in TYPES}
    _view(vanilla, "pair_input", str(d / "input"))
    compared = []
    for i, value_type in enumerate(TYPES):
        _view(vanilla, f"pair_values{i}", paths[value_type])
        try:  # analysed only: the pairs Spark's `=` refuses
            vanilla.sql(f"SELECT * FROM pair_input t WHERE EXISTS (SELECT 1 FROM pair_values{i} v WHERE v.value = t.{key})")
            compared.append(i)
        except AnalysisException:
            with pytest.raises(sieve.ColumnError, match=f"column '{key}'.*cannot be compared"):
                sieve.include(key, paths[value_type]).apply(spark.read.parquet(str(d / "input")))
    # the rows once per compared value type
    pool = spark.read.parquet(str(d / "input"))
    union = pool.selectExpr(f"{compared[0]} AS vt", "*")
    for i in compared[1:]:
        union = union.unionAll(pool.selectExpr(f"{i} AS vt", "*"))
    input_path = str(d / f"input_by_type_for_{key}")
    union.write.mode("overwrite").parquet(input_path)
    _view(vanilla, "pair_input", input_path)
    input_df = spark.read.parquet(input_path)
    for include in (True, False):
        leaf = sieve.include if include else sieve.exclude
        tree = sieve.any_of(*[sieve.all_of(sieve.include("vt", str(d / f"vt{i}.txt")), leaf(key, paths[TYPES[i]]))
                              for i in compared])
        where = " OR ".join(f"(vt = {i} AND {'' if include else 'NOT'} EXISTS "
                            f"(SELECT 1 FROM pair_values{i} v WHERE v.value = t.{key}))" for i in compared)
        expected = sorted((r.vt, r.id) for r in vanilla.sql(f"SELECT vt, id FROM pair_input t WHERE {where}").collect())
        df = tree.apply(input_df)
        assert bulk_filter_lowered(df), logical_plans(df)
        got = sorted((r.vt, r.id) for r in df.select("vt", "id").collect())
        differ = sorted({TYPES[vt] for vt, _ in set(got) ^ set(expected)})
        assert got == expected, (f"{'include' if include else 'exclude'} on a {key_type} key differs from Spark's "
                                 f"{'' if include else 'NOT '}EXISTS for values of type {', '.join(differ)}")
    # the text values joined too (castValues), not only read into a value set
    spark.conf.set(ALWAYS_JOINS, "0")
    try:
        check(spark, vanilla, spark.read.parquet(str(d / "input")), str(d / "input"), key, paths["STRING"])
    finally:
        spark.conf.unset(ALWAYS_JOINS)


@pytest.mark.parametrize("value_type", TYPES)
def test_a_string_key_against_values_of_each_type_is_spark_equality(spark, vanilla, files, value_type):
    """A STRING key against values of each type, a query per pair: Spark's `=` casts every key into the values'
    type, so the keys are only those that cast (the others fail under ANSI: tested below), and one tree over all
    value types would fail on the keys of the others."""
    d, values = files
    input_path = str(d / "input")
    input_df = spark.read.parquet(input_path)
    key = col("STRING")
    if value_type != "STRING":
        input_df = input_df.where(f"{key} IS NULL OR {casts(key, value_type)}")
        input_path = str(d / f"input_for_{col(value_type)}")
        input_df.write.mode("overwrite").parquet(input_path)
        input_df = spark.read.parquet(input_path)
    check(spark, vanilla, input_df, input_path, key, _values_path(spark, d, values, "STRING", value_type))
    if value_type == "STRING":  # the text values joined too
        spark.conf.set(ALWAYS_JOINS, "0")
        try:
            check(spark, vanilla, input_df, input_path, key, _values_path(spark, d, values, "STRING", value_type))
        finally:
            spark.conf.unset(ALWAYS_JOINS)


@pytest.mark.parametrize("ansi", ["true", "false"])
@pytest.mark.parametrize("key_type", ["INT", "DECIMAL(4,2)", "DATE", "BOOLEAN"])
def test_strings_that_do_not_cast_fail_under_ansi_and_match_nothing_otherwise(spark, vanilla, files, ansi,
                                                                               key_type):
    """Text values that are no `key_type` (`abc`, `1.5` for an INT key...), and a STRING key column holding
    them against values of `key_type`: under ANSI Spark's `=` fails, and so does the filter (naming the value);
    without it they match nothing, in both."""
    d, values = files
    input_path = str(d / "input")
    for session in (spark, vanilla):
        session.conf.set(ANSI, ansi)
    try:
        everything = text_values(spark, d, "STRING")
        check(spark, vanilla, spark.read.parquet(input_path), input_path, col(key_type), everything)
        check(spark, vanilla, spark.read.parquet(input_path), input_path, col("STRING"), values[key_type])
    finally:
        for session in (spark, vanilla):
            session.conf.unset(ANSI)


@pytest.fixture
def ansi(spark, vanilla):
    """ANSI on in both sessions (Spark 4's default; Spark 3.5's is off)."""
    for session in (spark, vanilla):
        session.conf.set(ANSI, "true")
    yield
    for session in (spark, vanilla):
        session.conf.unset(ANSI)


def test_a_decimal_against_text_compares_as_double(spark, vanilla, tmp_path, ansi):
    """`1.005` as text against a DECIMAL(4,2) column holding 1.01: Spark compares a decimal with a string as
    DOUBLE, so nothing matches (parsing the text into DECIMAL(4,2) would round it to 1.01)."""
    df = spark.createDataFrame([(1, "1.01"), (2, "1.00")], "id INT, d STRING").selectExpr(
        "id", "CAST(d AS DECIMAL(4,2)) AS d")
    (tmp_path / "v.txt").write_text("1.005\n1.0\n")
    got = sieve.include("d", str(tmp_path / "v.txt")).apply(df)
    assert [r.id for r in got.collect()] == [2]
    assert bulk_filter_lowered(got), logical_plans(got)
    vanilla.createDataFrame(df.collect(), df.schema).createOrReplaceTempView("decimals")
    vanilla.read.text(str(tmp_path / "v.txt")).createOrReplaceTempView("texts")
    assert [r.id for r in vanilla.sql("SELECT id FROM decimals WHERE EXISTS (SELECT 1 FROM texts WHERE texts.value = decimals.d)").collect()] == [2]


def test_a_string_column_against_int_values_compares_as_spark_does(spark, vanilla, tmp_path, ansi):
    """A STRING column against INT values: Spark casts both to BIGINT under ANSI: `01` and ` 1` equal 1, and a
    key that is no number fails the query, as Spark's `=` does."""
    path = str(tmp_path / "ints.parquet")
    spark.createDataFrame([(1,), (3000000,)], "v INT").write.parquet(path)
    df = spark.createDataFrame([(1, "01"), (2, " 1"), (3, "2"), (4, None)], "id INT, s STRING")
    got = sieve.include("s", path).apply(df)
    assert sorted(r.id for r in got.collect()) == [1, 2]
    assert sorted(r.id for r in sieve.exclude("s", path).apply(df).collect()) == [3, 4]
    vanilla.createDataFrame(df.collect(), df.schema).createOrReplaceTempView("strings")
    vanilla.read.parquet(path).createOrReplaceTempView("ints")
    assert sorted(r.id for r in vanilla.sql(
        "SELECT id FROM strings WHERE EXISTS (SELECT 1 FROM ints WHERE ints.v = strings.s)").collect()) == [1, 2]
    bad = spark.createDataFrame([(5, "x")], "id INT, s STRING")
    with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
        sieve.include("s", path).apply(bad).collect()
