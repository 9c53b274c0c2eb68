"""Bulk-filter benchmark: spark-sieve against the seed's naive plan and plain Spark, in one run.

    dev/bench bulk_filter                      # 10M-row base, the default (about 15-25 minutes on 2 cores)
    dev/bench bulk_filter --rows 200000 --runs 1 --limit 60 --scaling 10,100   # a quick look

Variants, each timed as a full write to Spark's no-op sink (every row and column materialised):
  floor    the bare scan: the same input written with no filter at all (what no filter can beat)
  naive    the seed's plan: each leaf a semi/anti join on its input, OR = union + dropDuplicates
  exists   plain Spark: the tree as EXISTS / NOT EXISTS predicates, in written order
  isin     plain Spark: the tree as `isin` over literal lists, what a user writes by hand for small
           lists (not run above ISIN_MAX_VALUES values in all)
  written  spark-sieve with reordering off (fused joins, written order)
  seed     spark-sieve, costModel=seed (the seed's fixed costs)
  stats    spark-sieve, costModel=stats: spark-sieve's defaults, the "sieve" of the ratio columns
  adaptive spark-sieve, costModel=stats, adaptiveOrder=true (the order re-sorted by each task as it measures)
Ratios are the first time / the second (above 1 = the second, spark-sieve, faster), measured in this run;
"sieve / floor" is the default variant's time over the bare scan's (1 = the filter costs nothing).
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import DATA, add_jar_argument, fmt, interleaved_medians, jar_note, ratio, run_with_limit, session  # noqa: E402

from pyspark.sql import functions as F  # noqa: E402

import spark_sieve as sieve  # noqa: E402
from spark_sieve import demo  # noqa: E402
from spark_sieve.bulk_filter import AllOf, Leaf  # noqa: E402

KEYS = [f"k{i}" for i in range(10)]
DOMAIN = 2_000_000          # each key column is uniform over [0, DOMAIN): a value set of n values keeps n/DOMAIN
SIZES = [10, 100, 1_000, 10_000, 100_000, 1_000_000]
ISIN_MAX_VALUES = 100_000
CARS_ROWS = 2_000_000   # the demo's cars table


def base_table(spark, rows):
    path = os.path.join(DATA, f"base_{rows}.parquet")
    if not os.path.exists(os.path.join(path, "_SUCCESS")):
        print(f"generating {rows:,} rows into {path} ...", flush=True)
        keys = [f"CAST(pmod(hash(id, {i}), {DOMAIN}) AS INT) AS k{i}" for i in range(len(KEYS))]
        spark.range(rows).selectExpr("id", *keys, "id * 7 AS payload", "uuid() AS note") \
            .write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def value_file(size, seed):
    path = os.path.join(DATA, "values", f"v{size}_{seed}.txt")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        values = random.Random(seed * 1_000_003 + size).sample(range(DOMAIN), size)
        with open(path + ".tmp", "w") as f:
            f.write("".join(f"{v}\n" for v in values))
        os.replace(path + ".tmp", path)
    return path


# ---- the trees ---------------------------------------------------------------------------------

def worst_order_tree():
    """An AND written least selective first: 1M values (keeps 50%) ... 10 values (keeps 0.0005%)."""
    return sieve.all_of(*[sieve.include(KEYS[i], value_file(size, i)) for i, size in enumerate(reversed(SIZES))])


def cars_table(spark, _rows):
    """The demo's generated cars (spark_sieve.demo), written once as Parquet."""
    path = os.path.join(DATA, f"cars_{CARS_ROWS}.parquet")
    if not os.path.exists(os.path.join(path, "_SUCCESS")):
        print(f"generating {CARS_ROWS:,} cars into {path} ...", flush=True)
        demo.cars_frame(spark, CARS_ROWS).write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def cars_tree():
    """The demo's tree, (D) or ((C) and (A and B)), over value files written like the demo's."""
    d = os.path.join(DATA, "cars_values")
    os.makedirs(d, exist_ok=True)
    return demo.cars_tree(d)


def best_order_tree():
    return sieve.all_of(*[sieve.include(KEYS[i], value_file(size, i)) for i, size in enumerate(SIZES)])


def nested_tree(leaves, seed=1, sizes=SIZES):
    """OR of ANDs of 5-way ORs (the shape DESIGN.md measured), random columns, sizes and kinds."""
    rnd = random.Random(seed)

    def leaf():
        make = sieve.include if rnd.random() < 0.7 else sieve.exclude
        size = rnd.choice(sizes)
        return make(rnd.choice(KEYS), value_file(size, rnd.randrange(8)))

    ors = [sieve.any_of(*[leaf() for _ in range(5)]) for _ in range(max(1, leaves // 5))]
    per_and = max(1, len(ors) // 5) if leaves >= 25 else 1
    ands = [sieve.all_of(*ors[i:i + per_and]) for i in range(0, len(ors), per_and)]
    return sieve.any_of(*ands)


# ---- the variants ------------------------------------------------------------------------------

def _values(spark, leaf, cache, key_type="INT"):
    if leaf.source not in cache:
        cache[leaf.source] = spark.read.text(leaf.source).selectExpr(f"CAST(value AS {key_type}) AS v")
    return cache[leaf.source]


def _key_type(df, column):
    return df.schema[column].dataType.simpleString()


def naive(spark, df, tree, cache=None):
    """The seed's execution: AND passes its output on; OR applies each child to its input, then
    union + dropDuplicates (wrong with duplicate rows; the base here has none)."""
    cache = {} if cache is None else cache
    if isinstance(tree, Leaf):
        values = _values(spark, tree, cache, _key_type(df, tree.column))
        return df.join(values, df[tree.column] == values.v, "left_semi" if tree.include else "left_anti")
    if isinstance(tree, AllOf):
        for child in tree.children:
            df = naive(spark, df, child, cache)
        return df
    parts = [naive(spark, df, child, cache) for child in tree.children]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out.dropDuplicates()


def exists(spark, df, tree):
    df.createOrReplaceTempView("bench_base")
    views = {}

    def sql(node):
        if isinstance(node, Leaf):
            if node.source not in views:
                views[node.source] = f"bench_v{len(views)}"
                _values(spark, node, {}, _key_type(df, node.column)).createOrReplaceTempView(views[node.source])
            v = views[node.source]
            test = f"EXISTS (SELECT 1 FROM {v} WHERE {v}.v = bench_base.{node.column})"
            return test if node.include else f"NOT {test}"
        joiner = " AND " if isinstance(node, AllOf) else " OR "
        return "(" + joiner.join(sql(c) for c in node.children) + ")"

    return spark.sql(f"SELECT * FROM bench_base WHERE {sql(tree)}")


def isin(spark, df, tree):
    """The tree as one Column of `isin` over literal lists; None when the lists are too long to write."""
    leaves = []

    def walk(node):
        if isinstance(node, Leaf):
            leaves.append(node)
        else:
            for c in node.children:
                walk(c)
    walk(tree)
    lists = {}
    for leaf in leaves:
        if leaf.source not in lists:
            with open(leaf.source) as f:
                lists[leaf.source] = [line.rstrip("\n") for line in f if line.strip()]
    # counted per leaf: each leaf writes its own literal list (5,000 leaves of shared files would plan for minutes)
    if sum(len(lists[leaf.source]) for leaf in leaves) > ISIN_MAX_VALUES:
        return None

    def column(node):
        if isinstance(node, Leaf):
            values = lists[node.source]
            if _key_type(df, node.column) == "int":
                values = [int(v) for v in values]
            hit = F.col(node.column).isin(values)
            # NOT EXISTS keeps a NULL key: so does NOT isin, once its NULL is read as true
            return hit if node.include else F.coalesce(~hit, F.lit(True))
        parts = [column(c) for c in node.children]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(node, AllOf) else (out | p)
        return out

    return df.where(column(tree))


def floor(spark, df, tree):
    return df


def with_sieve(spark, df, tree):
    return tree.apply(df)


# Each variant: how it builds the query, and the settings it runs under (set before every run, since
# runs interleave). The vanilla variants run with spark-sieve off: its rule would reorder EXISTS.
VANILLA = {"spark.sieve.enabled": "false"}
VARIANTS = {
    "floor": (floor, VANILLA),
    "naive": (naive, VANILLA),
    "exists": (exists, VANILLA),
    "isin": (isin, VANILLA),
    "written": (with_sieve, {"spark.sieve.enabled": "true", "spark.sieve.bulkFilter.enabled": "false"}),
    "seed": (with_sieve, {"spark.sieve.enabled": "true", "spark.sieve.bulkFilter.enabled": "true",
                          "spark.sieve.bulkFilter.costModel": "seed", "spark.sieve.bulkFilter.adaptiveOrder": "false"}),
    "adaptive": (with_sieve, {"spark.sieve.enabled": "true", "spark.sieve.bulkFilter.enabled": "true",
                              "spark.sieve.bulkFilter.costModel": "stats", "spark.sieve.bulkFilter.adaptiveOrder": "true"}),
    "stats": (with_sieve, {"spark.sieve.enabled": "true", "spark.sieve.bulkFilter.enabled": "true",
                           "spark.sieve.bulkFilter.costModel": "stats", "spark.sieve.bulkFilter.adaptiveOrder": "false"}),
}


def noop_write(df, settings=None):
    def run():
        for k, v in (settings or {}).items():
            df.sparkSession.conf.set(k, v)
        df.write.format("noop").mode("overwrite").save()
    return run


# name: (label, the tree, its input: the base table, or the demo's cars)
TREES = {"cars": ("demo's cars tree (4 leaves, 2M cars)", cars_tree, cars_table),
         "worst": ("worst-order AND (6 leaves)", worst_order_tree, base_table),
         "best": ("best-order AND (6 leaves)", best_order_tree, base_table),
         "nested": ("nested (100 leaves)", lambda: nested_tree(100), base_table),
         "nested5000": ("nested (5,000 leaves of 10-10K values)",
                        lambda: nested_tree(5000, seed=5, sizes=SIZES[:4]), base_table)}


def _leaf_count(tree):
    return 1 if isinstance(tree, Leaf) else sum(_leaf_count(c) for c in tree.children)


def bench_trees(spark, rows, runs, limit, tree_keys, variants, exists_max):
    variants = {v: VARIANTS[v] for v in variants}
    print(f"\n## Trees over {rows:,} rows (median of {runs} interleaved run(s) after a warm-up round, "
          f"limit {limit}s per run)\n")
    # (label, vanilla-side variant, sieve-side variant): ratios above 1 = the second is faster
    # spark-sieve as a user gets it: its default settings, the `stats` variant
    ratios = [("sieve vs exists", "exists", "stats"), ("sieve vs isin", "isin", "stats"),
              ("sieve vs written", "written", "stats"), ("sieve vs seed", "seed", "stats"),
              ("adaptive vs sieve", "stats", "adaptive")]
    print("| tree | " + " | ".join(variants) + " | " + " | ".join(r[0] for r in ratios) + " | sieve / floor |")
    print("|---|" + "---|" * (len(variants) + len(ratios) + 1))
    results = {}
    for key in tree_keys:
        name, make_tree, make_input = TREES[key]
        tree, df = make_tree(), make_input(spark, rows)
        actions = {}
        for variant, (build, settings) in variants.items():
            if variant in ("exists", "naive") and _leaf_count(tree) > exists_max:
                continue   # planning alone takes minutes (DESIGN.md saw StackOverflowError at 300)
            for k, v in settings.items():
                spark.conf.set(k, v)
            out = build(spark, df, tree)
            if out is not None:
                actions[variant] = noop_write(out, settings)
        times = interleaved_medians(spark, actions, runs, limit)
        results[name] = times
        cells = [fmt(times[v], limit) if v in actions else "-" for v in variants]
        floor_ratio = (f"{times['stats'] / times['floor']:.2f}" if times.get("stats") and times.get("floor")
                       else "n/a")
        print(f"| {name} | " + " | ".join(cells) + " | " +
              " | ".join(ratio(times.get(a), times.get(b)) for _, a, b in ratios) + f" | {floor_ratio} |", flush=True)
    return results


def bench_scaling(spark, leaf_counts, limit, exists_max):
    print("\n## Planning and running as the tree grows (1,000-row base; plan = apply + optimise + physical)\n")
    print("| leaves | sieve plan | sieve run | exists plan | exists run |")
    print("|---|---|---|---|---|")
    small = spark.range(1000).selectExpr("id", *[f"CAST(pmod(hash(id, {i}), 97) AS INT) AS k{i}"
                                                 for i in range(len(KEYS))])
    for n in leaf_counts:
        tree = nested_tree(n, seed=n, sizes=[10])
        row = [str(n)]
        for variant in ("stats", "exists"):
            if variant == "exists" and n > exists_max:
                row += [f"not run (above --exists-max {exists_max}; DESIGN.md saw StackOverflowError at 300)", "-"]
                continue
            start = time.perf_counter()
            try:
                build, settings = VARIANTS[variant]
                for k, v in settings.items():
                    spark.conf.set(k, v)
                out = build(spark, small, tree)
                out._jdf.queryExecution().executedPlan()
                plan = time.perf_counter() - start
                run = run_with_limit(spark, noop_write(out, settings), limit)
                row += [f"{plan:.2f}s", fmt(run, limit)]
            except Exception as e:  # noqa: BLE001 - report what Spark said and go on
                row += [f"failed: {str(e)[:80]}", "-"]
        print("| " + " | ".join(row) + " |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--limit", type=float, default=600, help="seconds before a run is cut")
    p.add_argument("--scaling", default="10,100,1000,5000", help="leaf counts for the planning table")
    p.add_argument("--exists-max", type=int, default=150, help="largest tree run with EXISTS predicates (and naive)")
    p.add_argument("--trees", default="cars,worst,best,nested,nested5000", help=f"which trees ({', '.join(TREES)})")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"which variants ({', '.join(VARIANTS)})")
    add_jar_argument(p)
    args = p.parse_args(argv)
    spark = session("spark-sieve bulk_filter bench", jar=args.jar)
    print(f"# bulk_filter bench: {' '.join(sys.argv)}")
    print(f"spark-sieve {sieve.__version__}, Spark {spark.version}, local[2], {os.cpu_count()} cores"
          + jar_note(args.jar))
    bench_trees(spark, args.rows, args.runs, args.limit, args.trees.split(","), args.variants.split(","),
                args.exists_max)
    bench_scaling(spark, [int(x) for x in args.scaling.split(",") if x], args.limit, args.exists_max)
    spark.stop()


if __name__ == "__main__":
    main()
