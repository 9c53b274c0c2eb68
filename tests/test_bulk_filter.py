"""Bulk filters from Python: every semantics row of DESIGN.md, answers against plain Spark's
EXISTS / NOT EXISTS formulation in a session without the extension (conftest's `vanilla`), the plan shape,
sources, JSON and errors."""

import json
import re

import pytest

import spark_sieve as sieve
from plans import logical_plans
from reference import exists_query, same_rows

CARS = [
    (1, "red", "BMW", "ASIA", 2001), (1, "red", "BMW", "ASIA", 2001), (2, "blue", "Tata", "NA", 2005),
    (3, "green", "Hyundai", "EUROPE", 2010), (4, None, "BMW", "NA", 2010), (5, "silver", None, "ASIA", None),
    (6, "gold", "Kia", "AFRICA", 1999), (6, "gold", "Kia", "AFRICA", 1999), (7, "blue", "Hyundai", "ASIA", 2020),
    (8, "white", "Tata", "EUROPE", 2001), (9, "yellow", "Ford", None, 2005), (10, "grey", "BMW", "NA", 2015),
]


CARS_SCHEMA = "id INT, color STRING, brand STRING, region STRING, year INT"


@pytest.fixture(scope="module")
def cars(spark):
    return spark.createDataFrame(CARS, CARS_SCHEMA)


@pytest.fixture(scope="module")
def files(spark, tmp_path_factory):
    d = tmp_path_factory.mktemp("values")

    def text(name, *lines):
        (d / name).write_text("".join(f"{line}\n" for line in lines))
        return str(d / name)

    f = {
        "colors": text("colors.txt", "green", "blue", "white", "grey", "silver", "gold", "yellow"),
        "few_colors": text("few_colors.csv", "name,color", "x,blue", "y,green", "z,silver"),
        "years": text("years.txt", "2001", "2010", "2020"),
        "bad_years": text("bad_years.txt", "2001", "twenty"),
        "empty": text("empty.txt"),
        "regions": str(d / "regions.parquet"),
        "brands": str(d / "brands.json"),
        "brands_orc": str(d / "brands.orc"),
        "region_dir": str(d / "region_dir"),
    }
    spark.createDataFrame([("ASIA",), ("NA",), (None,)], "region STRING").write.parquet(f["regions"])
    spark.createDataFrame([("BMW",), ("Hyundai",)], "brand STRING").coalesce(1).write.json(f["brands"])
    spark.createDataFrame([("Tata",), ("Kia",)], "brand STRING").write.orc(f["brands_orc"])
    spark.createDataFrame([("EUROPE",), ("AFRICA",)], "region STRING").repartition(3).write.parquet(f["region_dir"])
    return f


ALWAYS_JOINS = "spark.sieve.bulkFilter.maxSetBytes"
ADAPTIVE = "spark.sieve.bulkFilter.adaptiveOrder"


def check(spark, vanilla, cars, tree, joined=0):
    """Same rows (duplicates counted) as the EXISTS formulation, both ways a tree runs: value sets (the
    default: one SetFilter, no join after optimisation, but for the `joined` columns whose sources have
    no known size) and joins (maxSetBytes=0: one join per key column). One BulkFilter node before
    optimisation, none after; no DISTINCT. The value sets run with adaptive order (off by default: the
    property tests run the default)."""
    columns = {leaf.column for leaf in _leaves(tree)}
    spark.conf.set(ALWAYS_JOINS, "0")
    try:
        optimized = _check_answer(spark, vanilla, cars, tree)[1]
        assert _input_joins(optimized) == len(columns), optimized
        assert "SetFilter" not in optimized
    finally:
        spark.conf.unset(ALWAYS_JOINS)
    spark.conf.set(ADAPTIVE, "true")
    try:
        df, optimized = _check_answer(spark, vanilla, cars, tree)
    finally:
        spark.conf.unset(ADAPTIVE)
    assert _input_joins(optimized) == joined, optimized
    assert optimized.count("SetFilter") == (1 if joined < len(columns) else 0), optimized
    return df


def _check_answer(spark, vanilla, cars, tree):
    df = tree.apply(cars)
    ok, diff = same_rows(df, exists_query(vanilla, cars, tree))
    assert ok, f"differs from EXISTS/NOT EXISTS (extra, missing): {diff}"
    analyzed, optimized = logical_plans(df)
    assert analyzed.count("BulkFilter") == 1
    assert "BulkFilter" not in optimized
    assert "Deduplicate" not in optimized and "Distinct" not in optimized
    return df, optimized


def _input_joins(optimized_plan):
    """Joins of the input with a value table: every join but the file-tagging ones inside value tables."""
    joins = re.findall(r"\bJoin .*", optimized_plan)
    return len([j for j in joins if "sieve_file" not in j])


def _leaves(tree):
    return [tree] if isinstance(tree, sieve.bulk_filter.Leaf) else [l for c in tree.children for l in _leaves(c)]


def test_include_is_exists(spark, vanilla, cars, files):
    assert check(spark, vanilla, cars, sieve.include("color", files["colors"])).count() == 9


def test_exclude_is_not_exists_and_keeps_null_keys(spark, vanilla, cars, files):
    df = check(spark, vanilla, cars, sieve.exclude("color", files["colors"]))
    assert sorted(r.id for r in df.collect()) == [1, 1, 4]   # red twice, and the NULL color


def test_nulls_among_values_match_nothing(spark, vanilla, cars, files):
    # regions.parquet holds a NULL: the car with a NULL region is not included by it, and is kept by exclude
    assert 9 not in {r.id for r in check(spark, vanilla, cars, sieve.include("region", files["regions"])).collect()}
    assert 9 in {r.id for r in check(spark, vanilla, cars, sieve.exclude("region", files["regions"])).collect()}


def test_and_or_nested(spark, vanilla, cars, files):
    tree = sieve.any_of(
        sieve.include("region", files["regions"]),
        sieve.all_of(sieve.include("brand", files["brands"]),
                     sieve.any_of(sieve.exclude("color", files["colors"]), sieve.include("year", files["years"]))))
    check(spark, vanilla, cars, tree)


def test_duplicate_rows_kept_exactly(spark, vanilla, cars, files):
    tree = sieve.include("region", files["regions"]) | sieve.exclude("brand", files["brands"])
    df = check(spark, vanilla, cars, tree)
    assert df.where("id = 1").count() == 2 and df.where("id = 6").count() == 2


def test_empty_value_set(spark, vanilla, cars, files):
    assert check(spark, vanilla, cars, sieve.include("color", files["empty"])).count() == 0
    assert check(spark, vanilla, cars, sieve.exclude("color", files["empty"])).count() == len(CARS)


def test_values_cast_to_column_type(spark, vanilla, cars, files):
    check(spark, vanilla, cars, sieve.include("year", files["years"]))


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_uncastable_value_is_an_error_naming_the_file(spark, vanilla, cars, files, ansi):
    """Under ANSI, Spark's `year = value` fails on a value that is no number (it compares an INT with a string as
    BIGINT), and so does the filter, naming the file, the value and the column; without ANSI the value is NULL
    and matches nothing, in both."""
    for session in (spark, vanilla):
        session.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        if ansi == "false":
            check(spark, vanilla, cars, sieve.include("year", files["bad_years"]))
            return
        message = re.escape(f"value 'twenty' in {files['bad_years']} cannot be cast to BIGINT for column 'year'")
        df = sieve.include("year", files["bad_years"]).apply(cars)
        with pytest.raises(sieve.SourceError, match=message):  # a value set reads the file itself
            df.collect()
        spark.conf.set(ALWAYS_JOINS, "0")
        try:  # joined, the file is read by Spark's scan, which raises the same message, converted to the same class
            with pytest.raises(sieve.SourceError, match=message):
                sieve.include("year", files["bad_years"]).apply(cars).collect()
        finally:
            spark.conf.unset(ALWAYS_JOINS)
    finally:
        for session in (spark, vanilla):
            session.conf.unset("spark.sql.ansi.enabled")


def test_every_source_kind(spark, vanilla, cars, files):
    check(spark, vanilla, cars, sieve.include("color", files["few_colors"], value_column="color"))  # csv with header
    check(spark, vanilla, cars, sieve.include("brand", files["brands"]))                            # json
    check(spark, vanilla, cars, sieve.include("brand", files["brands_orc"]))                        # orc
    check(spark, vanilla, cars, sieve.include("region", files["region_dir"]))                       # directory of parquet
    check(spark, vanilla, cars, sieve.include("region", files["regions"], format="parquet"))
    frame = spark.createDataFrame([("Kia", 1), ("Ford", 2)], "b STRING, n INT")
    # a DataFrame made from Python rows has no size Spark knows on a classic session (an RDD): it is joined, not
    # held in memory; a Spark Connect client sends the rows themselves (a LocalRelation, its size known)
    unknown = 0 if sieve._connect.is_connect(spark) else 1
    check(spark, vanilla, cars, sieve.include("brand", frame) & sieve.exclude("id", frame, value_column="n"), joined=2 * unknown)
    known = spark.range(5, 8).selectExpr("CAST(id AS INT) AS n")
    check(spark, vanilla, cars, sieve.include("id", known) | sieve.include("brand", frame), joined=unknown)


def test_operators_build_the_same_tree(files):
    a, b, c = (sieve.include("color", files["colors"]), sieve.include("brand", files["brands"]),
               sieve.exclude("year", files["years"]))
    assert (a & b & c).to_json() == sieve.all_of(a, b, c).to_json()
    assert (a | b | c).to_json() == sieve.any_of(a, b, c).to_json()
    assert ((a | b) & c).to_json() == sieve.all_of(sieve.any_of(a, b), c).to_json()


def test_json_round_trip(spark, vanilla, cars, files):
    tree = sieve.any_of(sieve.include("region", files["regions"], format="parquet"),
                        sieve.all_of(sieve.include("brand", files["brands"]),
                                     sieve.exclude("color", files["few_colors"], value_column="color")))
    text = tree.to_json()
    again = sieve.BulkFilter.from_json(text)
    assert again.to_json() == text
    assert json.loads(text)["op"] == "or"
    check(spark, vanilla, cars, again)


def test_seed_order_shown_by_explain(spark, cars, files):
    spark.conf.set("spark.sieve.bulkFilter.costModel", "seed")
    try:
        _seed_order_shown_by_explain(spark, cars, files)
    finally:
        spark.conf.unset("spark.sieve.bulkFilter.costModel")


def _seed_order_shown_by_explain(spark, cars, files):
    a = sieve.include("color", files["colors"])
    b = sieve.include("color", files["few_colors"], value_column="color")
    c = sieve.include("brand", files["brands"])
    d = sieve.include("region", files["regions"])
    df = sieve.any_of(d, sieve.all_of(c, sieve.all_of(a, b))).apply(cars)
    text = sieve.explain(df, print_it=False)
    run = re.search(r"as run: +(.*)", text).group(1)
    assert re.sub(r"\[[^\]]*\]", "", run) == (
        f"(((include(color, {files['colors']}) and include(color, {files['few_colors']})) and "
        f"include(brand, {files['brands']})) or include(region, {files['regions']}))")
    assert "value sets: color (2 leaves), brand (1 leaves), region (1 leaves)" in text
    assert "joins:      none" in text
    spark.conf.set(ALWAYS_JOINS, "0")
    try:
        text = sieve.explain(df, print_it=False)
    finally:
        spark.conf.unset(ALWAYS_JOINS)
    assert re.search(r"joins: +color \(2 leaves, [^)]*\) -> brand \(1 leaves, [^)]*\) -> region \(1 leaves, [^)]*\) "
                     r"\(above spark.sieve.bulkFilter.maxSetBytes = 0 B\)", text), text
    assert "SetFilter" not in sieve.explain(df, print_it=False)     # nothing built before it runs
    df.collect()
    text = sieve.explain(df, print_it=False)
    assert re.search(r"sets: +\d+ values, \d+ bytes, read in \d+ ms, built in \d+ ms", text), text
    # the values of A and B (masks A, A+B, and B when B's values are read first; B's are all in A)
    assert re.search(r"color: short list of 7 values, [23] masks", text), text
    assert sieve.explain(cars, print_it=False).startswith("no BulkFilter in this plan")


def test_errors_at_apply_name_what_is_wrong(cars, files, tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(sieve.SourceError, match=re.escape(f"{missing}: no such file or directory")):
        sieve.include("color", missing).apply(cars)
    with pytest.raises(sieve.ColumnError, match="column 'colour': not a column of the input"):
        sieve.include("colour", files["colors"]).apply(cars)
    with pytest.raises(sieve.TreeError, match=r"filter tree at root.and\[1\]: empty OR"):
        sieve.all_of(sieve.include("color", files["colors"]), sieve.any_of()).apply(cars)
    odd = tmp_path / "values.xml"
    odd.write_text("<a/>")
    with pytest.raises(sieve.SourceError, match="cannot tell its format"):
        sieve.include("color", str(odd)).apply(cars)
    with pytest.raises(sieve.ColumnError, match="column 'colour': not a column of .*few_colors.csv"):
        sieve.include("color", files["few_colors"], value_column="colour").apply(cars)


def test_builder_checks_its_arguments(cars, files):
    with pytest.raises(sieve.TreeError, match="format must be one of"):
        sieve.include("color", files["colors"], format="xml")
    with pytest.raises(sieve.TreeError, match="column must be a non-empty column name"):
        sieve.include("", files["colors"])
    with pytest.raises(sieve.TreeError, match=r"and\[1\]: expected a filter"):
        sieve.all_of(sieve.include("color", files["colors"]), "brand")
    with pytest.raises(sieve.TreeError, match="a DataFrame source cannot be written to JSON"):
        sieve.include("color", cars).to_json()
    with pytest.raises(sieve.TreeError, match="unknown op 'xor'"):
        sieve.BulkFilter.from_json('{"op": "xor"}')


def test_the_jvm_reads_json_trees(spark, vanilla, cars, files, monkeypatch):
    # from_json asks the session's JVM (FilterTreeJson), which writes the tree back in to_json's form
    tree = sieve.BulkFilter.from_json(json.dumps({"op": "AND", "children": [
        {"op": "include", "column": "color", "source": {"path": files["colors"], "format": "TEXT"}, "extra": 1}]}))
    assert json.loads(tree.to_json()) == {"op": "and", "children": [
        {"op": "include", "column": "color", "source": {"path": files["colors"], "format": "TEXT"}}]}
    check(spark, vanilla, cars, tree)
    with pytest.raises(sieve.TreeError, match=r"filter tree at root.or\[0\]: missing 'column'"):
        sieve.BulkFilter.from_json('{"op": "or", "children": [{"op": "include", "source": {"path": "p"}}]}')
    with pytest.raises(sieve.TreeError, match="filter tree at root: not valid JSON"):
        sieve.BulkFilter.from_json("{")
    # read with no session about: the JVM reads it at apply(), with the same errors
    monkeypatch.setattr("pyspark.sql.SparkSession.getActiveSession", lambda: None)
    unread = sieve.BulkFilter.from_json('{"op": "xor"}')
    monkeypatch.undo()
    with pytest.raises(sieve.TreeError, match=r"filter tree at root: unknown op 'xor' \(expected and, or, include"):
        unread.apply(cars)


def test_paths_with_spaces_and_many_files_on_one_column(spark, vanilla, cars, tmp_path):
    d = tmp_path / "value files"
    d.mkdir()
    paths = []
    for i, years in enumerate([(2001, 2005), (2010,), (2015, 2020), (1999,)]):
        p = d / f"years {i}.txt"
        p.write_text("".join(f"{y}\n" for y in years))
        paths.append(str(p))
    tree = (sieve.include("year", paths[0]) & sieve.exclude("year", paths[1])) | sieve.include("year", paths[2]) \
        | (sieve.include("year", str(d)) & sieve.exclude("year", paths[3]))
    check(spark, vanilla, cars, tree)


def _python_eval(tree, row, values):
    if isinstance(tree, sieve.bulk_filter.Leaf):
        hit = row[tree.column] is not None and row[tree.column] in values[tree.source]
        return hit if tree.include else not hit
    parts = (_python_eval(c, row, values) for c in tree.children)
    return all(parts) if isinstance(tree, sieve.bulk_filter.AllOf) else any(parts)


def test_thousand_leaf_tree_matches_an_independent_evaluation(spark, tmp_path):
    import random
    rnd = random.Random(7)
    columns = [f"c{i}" for i in range(10)]
    rows = [tuple(rnd.choice([None] + list(range(40))) for _ in columns) for _ in range(400)]
    rows += rows[:50]  # duplicates
    df = spark.createDataFrame(rows, ", ".join(f"{c} INT" for c in columns))
    values, leaves = {}, []
    for i in range(1000):
        p = tmp_path / f"v{i}.txt"
        vals = {rnd.randrange(40) for _ in range(rnd.randrange(0, 6))}
        p.write_text("".join(f"{v}\n" for v in vals))
        values[str(p)] = vals
        leaves.append((sieve.include if rnd.random() < 0.6 else sieve.exclude)(columns[i % 10], str(p)))
    groups = [leaves[i:i + 100] for i in range(0, 1000, 100)]   # 10-way OR of ANDs of 5-way ORs
    tree = sieve.any_of(*[sieve.all_of(*[sieve.any_of(*g[j:j + 5]) for j in range(0, 100, 5)]) for g in groups])
    out = tree.apply(df)
    expected = sorted((r for r in rows if _python_eval(tree, dict(zip(columns, r)), values)), key=repr)
    assert sorted((tuple(r) for r in out.collect()), key=repr) == expected
    optimized = logical_plans(out)[1]
    assert _input_joins(optimized) == 0 and optimized.count("SetFilter") == 1
    assert logical_plans(out)[0].count("BulkFilter") == 1 and "BulkFilter" not in optimized
