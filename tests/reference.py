"""Reference answers for bulk-filter trees, computed without spark-sieve: the same tree as a plain
Spark SQL query of EXISTS / NOT EXISTS predicates (what a user would otherwise write)."""

import os
from collections import Counter

from spark_sieve.bulk_filter import AllOf, AnyOf, Leaf


def read_values(spark, leaf):
    if not isinstance(leaf.source, str):
        return leaf.source
    name = leaf.source
    if os.path.isdir(name):
        name = next(f for f in os.listdir(name) if not f.startswith(("_", ".")))
    fmt = leaf.format or {"txt": "text", "csv": "csv", "parquet": "parquet", "json": "json",
                          "orc": "orc"}[name.rsplit(".", 1)[-1]]
    reader = spark.read.option("header", "true") if fmt == "csv" else spark.read
    return reader.format(fmt).load(leaf.source)


def exists_query(spark, df, tree):
    """`df` filtered by `tree`, written as EXISTS / NOT EXISTS subqueries over temp views."""
    df.createOrReplaceTempView("ref_input")
    types = dict((f.name, f.dataType.simpleString()) for f in df.schema.fields)
    counter = [0]

    def sql(node):
        if isinstance(node, Leaf):
            counter[0] += 1
            view = f"ref_v{counter[0]}"
            values = read_values(spark, node)
            col = node.value_column or values.columns[0]
            values.selectExpr(f"try_cast(`{col}` AS {types[node.column]}) AS value").createOrReplaceTempView(view)
            test = f"EXISTS (SELECT 1 FROM {view} WHERE {view}.value = ref_input.`{node.column}`)"
            return test if node.include else f"NOT {test}"
        joiner = " AND " if isinstance(node, AllOf) else " OR "
        return "(" + joiner.join(sql(c) for c in node.children) + ")"

    return spark.sql(f"SELECT * FROM ref_input WHERE {sql(tree)}")


def same_rows(actual, expected):
    """Multiset equality of two DataFrames' rows (duplicates count)."""
    a, e = Counter(map(tuple, actual.collect())), Counter(map(tuple, expected.collect()))
    return a == e, (a - e, e - a)
