"""The demo job: `dev/demo` (or `python -m spark_sieve.demo`).

Starts a local session with spark-sieve, shows what the extension is and what it does on a small
generated data set. It grows with each feature.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

from pyspark.sql import SparkSession

import spark_sieve as sieve


def _timed(df: Any) -> float:
    """Seconds to compute every row and column of `df` (written to Spark's no-op sink)."""
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def _write_values(directory: str, name: str, values: List[str]) -> str:
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write("".join(f"{v}\n" for v in values))
    return path


COLORS = ["red", "green", "blue", "white", "grey", "silver", "gold", "yellow", "black", "orange"]
BRANDS = [f"brand{i}" for i in range(200)]
REGIONS = [f"region{i}" for i in range(50)]


def cars_frame(spark: Any, rows: int) -> Any:
    """`rows` generated cars: id, color (10), brand (200), region (50), year (30)."""
    return spark.range(rows).selectExpr(
        "id",
        f"element_at(array({', '.join(repr(c) for c in COLORS)}), int(pmod(hash(id, 1), {len(COLORS)})) + 1) AS color",
        f"concat('brand', pmod(hash(id, 2), {len(BRANDS)})) AS brand",
        f"concat('region', pmod(hash(id, 3), {len(REGIONS)})) AS region",
        "pmod(hash(id, 4), 30) + 1995 AS year")


def cars_tree(directory: str) -> sieve.BulkFilter:
    """The seed's cars example, (D) or ((C) and (A and B)): A, B on color, C on brand, D on region, each a
    text file of values written into `directory`."""
    a = sieve.include("color", _write_values(directory, "colors_a.txt", COLORS[1:8]))
    b = sieve.include("color", _write_values(directory, "colors_b.txt", ["blue", "green", "silver"]))
    c = sieve.include("brand", _write_values(directory, "brands_c.txt", BRANDS[:3]))
    d = sieve.include("region", _write_values(directory, "regions_d.txt", REGIONS[:2]))
    return sieve.any_of(d, sieve.all_of(c, sieve.all_of(a, b)))


def _bulk_filter_demo(spark: SparkSession, rows: int = 2_000_000) -> None:
    """The seed's cars example over generated cars held in memory."""
    cars = cars_frame(spark, rows).cache()
    cars.count()
    d = tempfile.mkdtemp(prefix="spark-sieve-demo-")
    tree: Any = cars_tree(d)  # (its parts, taken apart below)
    dd, (c, ab) = tree.children[0], tree.children[1].children
    a, b = ab.children

    print(f"\nBulk filter over {rows:,} generated cars: (D) or ((C) and (A and B))")
    print("  A = colors_a.txt (7 colors), B = colors_b.txt (3), C = brands_c.txt (3 brands), "
          "D = regions_d.txt (2 regions)")
    filtered = tree.apply(cars)
    print()
    sieve.explain(filtered)

    def exists_sql() -> Any:
        cars.createOrReplaceTempView("demo_cars")
        for name, leaf in (("va", a), ("vb", b), ("vc", c), ("vd", dd)):
            spark.read.text(leaf.source).createOrReplaceTempView(name)
        return spark.sql(
            "SELECT * FROM demo_cars t WHERE EXISTS (SELECT 1 FROM vd WHERE vd.value = t.region) OR "
            "(EXISTS (SELECT 1 FROM vc WHERE vc.value = t.brand) AND (EXISTS (SELECT 1 FROM va WHERE "
            "va.value = t.color) AND EXISTS (SELECT 1 FROM vb WHERE vb.value = t.color)))")

    timings: Dict[str, float] = {}
    makers: List[Tuple[str, Callable[[], Any]]] = [("spark-sieve", lambda: tree.apply(cars)),
                                                   ("plain Spark (EXISTS)", exists_sql)]
    for label, make in makers:
        _timed(make())  # warm-up: the first query of a JVM pays for class loading and code generation
        timings[label] = _timed(make())
        print(f"  {label:22s} {make().count():>9,} rows in {timings[label]:.2f} s")
    ratio = timings["plain Spark (EXISTS)"] / timings["spark-sieve"]
    print(f"  ratio: spark-sieve is {ratio:.2f}x the speed of plain Spark on this tree (measured just now)")
    shutil.rmtree(d, ignore_errors=True)
    cars.unpersist()


def _plan_lines(df: Any) -> List[str]:
    """The executed (final adaptive) physical plan, one operator a line, without scan details."""
    text = df._jdf.queryExecution().executedPlan().toString()
    lines = [line.split(" Batched:")[0].split(", [plan_id")[0] for line in text.splitlines()]
    return [line for line in lines if line.strip() and "Initial Plan" not in line][:24]


def _side_by_side(left: List[str], right: List[str], width: int = 78) -> str:
    out = [f"  {'vanilla Spark':{width}s} | spark-sieve", f"  {'-' * width} | {'-' * width}"]
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        out.append(f"  {a[:width]:{width}s} | {b[:width]}")
    return "\n".join(out)


def _dynamic_filter_demo(spark: SparkSession, fact_rows: int = 6_000_000, dim_rows: int = 600_000) -> None:
    """A star join whose small side is filtered: the fact scan is pruned by the dim keys that survive."""
    d = tempfile.mkdtemp(prefix="spark-sieve-demo-")
    spark.range(fact_rows).selectExpr(f"CAST(pmod(hash(id), {dim_rows}) AS INT) AS k", "rand(1) * 100 AS amount") \
        .write.parquet(os.path.join(d, "fact"))
    spark.range(dim_rows).selectExpr("CAST(id AS INT) AS k", "CAST(pmod(hash(id, 9), 1000) AS INT) AS cat") \
        .write.parquet(os.path.join(d, "dim"))
    spark.read.parquet(os.path.join(d, "fact")).createOrReplaceTempView("demo_fact")
    spark.read.parquet(os.path.join(d, "dim")).createOrReplaceTempView("demo_dim")
    query = ("SELECT d.cat, count(*), sum(f.amount) FROM demo_fact f JOIN demo_dim d ON f.k = d.k "
             "WHERE d.cat = 7 GROUP BY d.cat")
    print(f"\nDynamic filter: a star join, fact {fact_rows:,} rows x dim {dim_rows:,} rows (Parquet, no statistics)")
    print(f"  {query}")
    print("  (sort-merge join forced, as Spark picks for a large dim)")
    settings = {"spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}
    for k, v in settings.items():
        spark.conf.set(k, v)
    timings: Dict[str, float] = {}
    plans: Dict[str, Any] = {}
    try:
        for label, on in (("vanilla Spark", "false"), ("spark-sieve", "true"), ("vanilla Spark", "false"),
                          ("spark-sieve", "true")):  # the first round warms up the JVM
            spark.conf.set("spark.sieve.enabled", on)
            df = spark.sql(query)
            start = time.perf_counter()
            rows = df.collect()
            timings[label] = time.perf_counter() - start
            plans[label] = df
        print()
        print(_side_by_side(_plan_lines(plans["vanilla Spark"]), _plan_lines(plans["spark-sieve"])))
        print()
        sieve.explain(plans["spark-sieve"])
        print(f"\n  answer: {rows[0][1]:,} fact rows joined (the same with and without spark-sieve)")
        for label, t in timings.items():
            print(f"  {label:14s} {t:.2f} s")
        print(f"  ratio: spark-sieve is {timings['vanilla Spark'] / timings['spark-sieve']:.2f}x the speed of "
              "vanilla Spark on this query (measured just now)")
    finally:
        spark.conf.set("spark.sieve.enabled", "true")
        for k in settings:
            spark.conf.unset(k)
        shutil.rmtree(d, ignore_errors=True)


def _connect_demo(rows: int = 200_000) -> None:
    """The cars tree from a Spark Connect client: a local Connect server started with spark-sieve's settings."""
    import pyspark

    print("\nThe same tree from a Spark Connect client (SparkSession.builder.remote('local[2]'), no py4j)")
    builder = SparkSession.builder.remote("local[2]")
    if pyspark.__version__.startswith("3."):  # Spark 3.5 ships its Connect server apart from pyspark's jars
        server = os.environ.get("SIEVE_CONNECT_SERVER_JAR")  # (dev/demo fetches it)
        if not server:
            print("  (skipped: Spark 3.5's Connect server is not part of pyspark; give the builder spark.jars.packages="
                  "org.apache.spark:spark-connect_2.12:<your Spark version>, or run the demo through dev/demo)")
            return
        builder = sieve._connect.with_server_jar(builder, server)
    builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    spark = sieve.configure(builder).getOrCreate()
    d = tempfile.mkdtemp(prefix="spark-sieve-demo-")
    try:
        cars = cars_frame(spark, rows)
        filtered = cars_tree(d).apply(cars)
        print(f"  {type(filtered).__module__}.{type(filtered).__name__}: {filtered.count():,} of {rows:,} cars kept; "
              f"server's spark-sieve registered: {sieve.status(spark)['registered']}")
    finally:
        sieve._connect.stop_local(spark)
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    builder = (SparkSession.builder.master("local[2]").appName("spark-sieve demo")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               # Spark's console progress bars would run through the results printed below
               .config("spark.ui.showConsoleProgress", "false"))
    spark = sieve.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        print(f"spark-sieve {sieve.__version__} — a Spark SQL extension for filter-heavy queries")
        print(f"  jar: {sieve.jar_path()}")
        status = sieve.status(spark)
        print(f"  Spark {status['runningSpark']} (jar built for {status['builtForSpark']}), "
              f"extension registered: {status['registered']}")
        print("  settings in force:")
        for key in sorted(k for k in status if k.startswith("spark.sieve.")):
            print(f"    {key} = {status[key]}")

        _bulk_filter_demo(spark)

        print("\nWhat it does with a mistyped setting: spark.sieve.enabld=false")
        spark.conf.set("spark.sieve.enabld", "false")
        try:
            sieve.status(spark)
        except sieve.ConfigError as e:
            print(f"  ConfigError: {e}")
        finally:
            spark.conf.unset("spark.sieve.enabld")

        _dynamic_filter_demo(spark)
    finally:
        spark.stop()
    _connect_demo()


if __name__ == "__main__":
    main()
