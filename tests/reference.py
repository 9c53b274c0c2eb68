"""Reference answers for bulk-filter trees, computed without spark-sieve: the same tree as a plain
Spark SQL query of EXISTS / NOT EXISTS predicates (what a user would otherwise write), run in a vanilla
session (conftest's `vanilla`: no extension at all, so not even spark-sieve's own subquery ordering), over
the same rows and value files."""

import os
from collections import Counter

from pyspark.sql.types import StringType

from spark_sieve._connect import is_connect
from spark_sieve.bulk_filter import AllOf, AnyOf, Leaf
from vanilla_session import sieve_rules


def in_session(session, df):
    """`df`'s rows (and schema) as a DataFrame of `session`: a DataFrame of another session (spark-sieve's, or a
    Spark Connect client's) moved to the vanilla one. For the small inputs of answer tests."""
    return session.createDataFrame(df.collect(), df.schema)


def read_values(spark, leaf):
    if not isinstance(leaf.source, str):
        return in_session(spark, leaf.source)
    name = leaf.source
    if os.path.isdir(name):
        name = next(f for f in os.listdir(name) if not f.startswith(("_", ".")))
    fmt = leaf.format or {"txt": "text", "csv": "csv", "parquet": "parquet", "json": "json",
                          "orc": "orc"}[name.rsplit(".", 1)[-1]]
    reader = spark.read.option("header", "true") if fmt == "csv" else spark.read
    return reader.format(fmt).load(leaf.source)


def exists_query(vanilla, df, tree):
    """`df` filtered by `tree`, written as EXISTS / NOT EXISTS subqueries over temp views of `vanilla` (a session
    without spark-sieve; `df`'s rows and the DataFrame sources' rows are copied into it)."""
    spark = vanilla
    assert not _has_sieve(vanilla), "the reference side must be a session without spark-sieve (conftest's vanilla)"
    df = in_session(vanilla, df)
    df.createOrReplaceTempView("ref_input")
    types = dict((f.name, f.dataType) for f in df.schema.fields)
    counter = [0]

    def sql(node):
        if isinstance(node, Leaf):
            counter[0] += 1
            view = f"ref_v{counter[0]}"
            values = read_values(spark, node)
            col = node.value_column or values.columns[0]
            # Spark's `=` decides, as written; but strings against a collated column are taken in its collation
            # (Spark refuses `=` between two implicit collations), as a leaf takes them
            key_type = types[node.column]
            collated = isinstance(key_type, StringType) and key_type.simpleString() != "string"
            value = f"CAST(`{col}` AS {key_type.simpleString()})" if collated else f"`{col}`"
            values.selectExpr(f"{value} AS value").createOrReplaceTempView(view)
            test = f"EXISTS (SELECT 1 FROM {view} WHERE {view}.value = ref_input.`{node.column}`)"
            return test if node.include else f"NOT {test}"
        joiner = " AND " if isinstance(node, AllOf) else " OR "
        return "(" + joiner.join(sql(c) for c in node.children) + ")"

    return spark.sql(f"SELECT * FROM ref_input WHERE {sql(tree)}")


def _has_sieve(session):
    return is_connect(session) or bool(sieve_rules(session))


def same_rows(actual, expected):
    """Multiset equality of two DataFrames' rows (duplicates count)."""
    a, e = Counter(map(tuple, actual.collect())), Counter(map(tuple, expected.collect()))
    return a == e, (a - e, e - a)
