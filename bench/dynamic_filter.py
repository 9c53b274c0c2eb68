"""Dynamic-filter benchmark: a star join whose small side is filtered, spark-sieve against plain Spark.

    dev/bench dynamic_filter                    # 30M-row fact, 3M-row dim, the default
    dev/bench dynamic_filter --fact-rows 2000000 --dim-rows 200000 --runs 1 --limit 120   # a quick look

The query, timed as a full collect() of a freshly planned DataFrame (planning included):

    SELECT d.cat, sum(f.amount), count(*) FROM fact f JOIN dim d ON f.k = d.k
    WHERE d.cat < N GROUP BY d.cat           -- N / 1000 = the share of dim rows kept

Data (generated once under .cache/bench/, plain Parquet read with spark.read.parquet, no statistics):
  dim      --dim-rows rows: k INT unique (0..dim-1), cat INT uniform over 1000 values (so `cat < N` keeps
           N/1000 of the rows, scattered over the whole key range), band INT = the key's thousandth
           (`band < N` keeps a contiguous key range instead, as a date dimension would), name STRING
  fact     --fact-rows rows: k INT uniform over the dim keys, amount DOUBLE, qty INT, channel STRING, in
           two layouts holding the same rows: `random` (key order random) and `clustered` (range-partitioned
           and sorted by k, so each row group's min/max on k is narrow). Both are written with row groups
           of about --row-group-mb MB (the fact is narrow: Spark's 128 MB default would give 2-3 row groups).
  floor    the bare scan of the fact columns the query reads, without a join: SELECT sum(amount), count(k)

Join modes (set before every run, with the variant's settings, since runs interleave):
  default  Spark's defaults (AQE on: it may turn a sort-merge join into a broadcast join at run time)
  smj      sort-merge forced: spark.sql.autoBroadcastJoinThreshold=-1 and
           spark.sql.adaptive.autoBroadcastJoinThreshold=-1 (AQE cannot convert either)
Variants:
  vanilla  spark.sieve.enabled=false, everything else Spark's defaults
  bloom    spark.sieve.enabled=false, Spark's runtime bloom filter forced on (application-side threshold
           1b, creation-side threshold 1g); it only fires on joins Spark plans as shuffle joins
  sieve    spark.sieve.enabled=true plus --sieve-conf (default spark.sieve.dynamicFilter.enabled=true)
  sieve-eager  the same with spark.sieve.dynamicFilter.minApplicationBytes=0: a filter on every join the
           rule allows, whatever the size (shows what the size threshold protects; TPC-DS section)
  sieve-nodf  the sieve variant with spark.sieve.dynamicFilter.enabled=false: what the extension costs a
           query apart from its filters (planning, the other rules) — tells a filter's cost from noise
  sieve-alt  the sieve variant plus --alt-conf: one setting's effect, measured in the same sitting
Ratios: vanilla/sieve and bloom/sieve above 1 = spark-sieve faster; sieve/floor = how close to a bare scan.
Each variant's rows are checked against vanilla's (as tests/answers.py compares them): a different answer is
reported as WRONG ANSWER and not timed. (The TPC-DS section does not check: its LIMITs without a total
order may pick different rows; tests/test_tpcds.py compares every query's full answer.)
The `plans` column is read from each variant's final (adaptive) plan: the join Spark ran (BHJ broadcast
hash, SMJ sort-merge, SHJ shuffled hash), +bloom when a runtime bloom filter is in it, +DF when a
spark-sieve dynamic filter is.

--tpcds SF adds a TPC-DS section (data and queries from tests/tpcds.py, cached under .cache/bench/;
--partitioned with the fact tables partitioned by their date key), --tpch SF a TPC-H section (tests/tpch.py:
tpchgen-cli Parquet, the 22 queries), --star3 a three-dimension star join over the star fact; --no-star
leaves out the star join. Suites: each query's time under the chosen variants (join mode: Spark's defaults;
the queries as the suite writes them, LIMIT included), run once, and --runs times when a sieve plan of it
holds a dynamic filter (--short-runs times when that query took under --short-under seconds; --recheck
ROUNDS more rounds when it then looks >10% slower, three times as many when its medians are short); the
ratios, the totals (all, and the queries with a filter), which queries got one and which ran >10% slower (by
whether the sieve plan is vanilla's, ids aside), and why the sieve plans' other joins got none (spark_sieve.explain's
reasons, counted by kind); with vanilla and sieve, also the ratio of the JVM's CPU seconds (median per query, local
mode; read from /proc).

    dev/bench dynamic_filter --no-star --tpch 10 --variants vanilla,bloom,sieve --runs 3
    dev/bench dynamic_filter --no-star --tpcds 10 --partitioned --variants vanilla,bloom,sieve --runs 3
"""

import argparse
import importlib
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))  # answers, tpcds

from answers import diff_answers  # noqa: E402
from common import DATA, add_jar_argument, fmt, interleaved_times, jar_note, ratio, session  # noqa: E402

import spark_sieve as sieve  # noqa: E402

CATS = 1000                  # dim.cat is uniform over [0, CATS); `cat < N` keeps N / CATS of the dim rows
FACT_FILES = 8
SELECTIVITIES = [0.001, 0.01, 0.1, 0.5]

# ---- data --------------------------------------------------------------------------------------


def _done(path):
    return os.path.exists(os.path.join(path, "_SUCCESS"))


def _write(df, path, row_group_mb=None):
    writer = df.write.mode("overwrite")
    if row_group_mb:
        writer = writer.option("parquet.block.size", str(int(row_group_mb * 1024 * 1024)))
    writer.parquet(path)


def _generate(what, path, make):
    """Writes `path` with make(path) unless it is already there, printing how long that took."""
    if _done(path):
        return
    print(f"generating {what} into {path} ...", flush=True)
    start = time.perf_counter()
    make(path)
    print(f"  ... {time.perf_counter() - start:.1f}s", flush=True)


def star_tables(spark, fact_rows, dim_rows, layouts, row_group_mb):
    """{'dim': path, 'random': path, 'clustered': path} (the clustered layout only when asked for; it is
    the random layout's rows sorted), generating what is missing."""
    paths = {"dim": os.path.join(DATA, f"star_dim_{dim_rows}.parquet")}
    _generate(f"dim ({dim_rows:,} rows)", paths["dim"], lambda p: _write(
        spark.range(0, dim_rows, 1, 2).selectExpr(
            "CAST(id AS INT) AS k",
            f"CAST(pmod(hash(id, 11), {CATS}) AS INT) AS cat",
            f"CAST(id * {CATS} DIV {dim_rows} AS INT) AS band",
            "concat('customer#', lpad(CAST(id AS STRING), 9, '0')) AS name"), p))

    rg = f"{row_group_mb:g}mb"
    paths["random"] = os.path.join(DATA, f"star_fact_{fact_rows}_{dim_rows}_random_{rg}.parquet")
    _generate(f"fact, random layout ({fact_rows:,} rows)", paths["random"], lambda p: _write(
        spark.range(0, fact_rows, 1, FACT_FILES).selectExpr(
            f"CAST(pmod(hash(id, 1), {dim_rows}) AS INT) AS k",
            "CAST(pmod(hash(id, 2), 100000) AS DOUBLE) / 100 AS amount",
            "CAST(pmod(hash(id, 3), 50) + 1 AS INT) AS qty",
            "element_at(array('store', 'web', 'catalog'), CAST(pmod(hash(id, 4), 3) + 1 AS INT)) AS channel"),
        p, row_group_mb))

    if "clustered" in layouts:
        paths["clustered"] = os.path.join(DATA, f"star_fact_{fact_rows}_{dim_rows}_clustered_{rg}.parquet")
        _generate("fact, clustered layout (the random layout's rows sorted by k)", paths["clustered"],
                  lambda p: _write(spark.read.parquet(paths["random"])
                                   .repartitionByRange(FACT_FILES, "k").sortWithinPartitions("k"),
                                   p, row_group_mb))
    return paths


def parquet_shape(spark, path):
    """'8 files, 31 row groups, 212 MB' from the Parquet footers (through the JVM: no pyarrow here)."""
    files = [f for f in os.listdir(path) if f.endswith(".parquet")]
    size = sum(os.path.getsize(os.path.join(path, f)) for f in files)
    try:
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        groups = 0
        for f in files:
            hpath = jvm.org.apache.hadoop.fs.Path(os.path.join(path, f))
            reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
                jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(hpath, conf))
            try:
                groups += reader.getFooter().getBlocks().size()
            finally:
                reader.close()
        groups = f"{groups} row groups"
    except Exception:  # noqa: BLE001 - the shape is information only
        groups = "? row groups"
    return f"{len(files)} files, {groups}, {size / 2**20:.0f} MB"


# ---- settings ----------------------------------------------------------------------------------

BLOOM = {
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "true",
    "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold": "1b",
    "spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold": "1g",
}
MODES = {
    "default": {},
    "smj": {"spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"},
}
DEFAULT_SIEVE_CONF = "spark.sieve.dynamicFilter.enabled=true"
VARIANTS = ("vanilla", "bloom", "sieve", "sieve-eager", "sieve-nodf", "sieve-alt")


def _pairs(conf):
    return {k.strip(): v.strip() for k, v in (kv.split("=", 1) for kv in conf.split(",") if kv.strip())}


def variant_settings(args):
    """Each variant's settings: the sieve ones add --sieve-conf, sieve-alt --alt-conf too."""
    sieve_extra = _pairs(args.sieve_conf)
    return {
        "vanilla": {"spark.sieve.enabled": "false"},
        "bloom": {"spark.sieve.enabled": "false", **BLOOM},
        "sieve": {"spark.sieve.enabled": "true", **sieve_extra},
        "sieve-eager": {"spark.sieve.enabled": "true", **sieve_extra,
                        "spark.sieve.dynamicFilter.minApplicationBytes": "0"},
        "sieve-nodf": {"spark.sieve.enabled": "true", **sieve_extra, "spark.sieve.dynamicFilter.enabled": "false"},
        "sieve-alt": {"spark.sieve.enabled": "true", **sieve_extra, **_pairs(args.alt_conf)},
    }


def full_settings(*parts, all_parts):
    """The union of `parts`, with every other key any mode or variant sets reset to Spark's default
    (None = unset), so that whatever ran before leaves nothing behind."""
    out = {k: None for part in all_parts for k in part}
    for part in parts:
        out.update(part)
    return out


def apply(spark, settings):
    for k, v in settings.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


def collect(spark, sql, settings, plans=None, key=None, answers=None, frames=None):
    """An action: apply `settings`, plan `sql` afresh (a DataFrame run twice would reuse its shuffle
    files), collect it; keeps the final plan's string in plans[key], the rows in answers[key] and, with
    `frames`, the DataFrame in frames[key] (read after the timing, e.g. by spark_sieve.explain). A text of
    several statements separated by ';' runs them in turn (some TPC-DS queries come in two parts)."""
    statements = [s for s in sql.split(";") if s.strip()]

    def run():
        apply(spark, settings)
        for statement in statements:
            df = spark.sql(statement)
            rows = df.collect()
        if plans is not None:
            plans[key] = df._jdf.queryExecution().executedPlan().toString()
        if answers is not None:
            answers[key] = rows
        if frames is not None:
            frames[key] = df
    return run


# spark_sieve.explain's reasons for a join without a filter, in a few kinds (the first that matches)
WHY_KINDS = (
    ("partition column", "its key is the scan's partition column (Spark's DPP prunes it)"),
    ("minApplicationBytes", "the scan reads less than minApplicationBytes (after DPP where it runs)"),
    ("spread over every row group", "the keys would skip no row group and the broadcast join probes each row anyway"),
    ("maxPassRatio", "the keys would keep nearly every row (maxPassRatio)"),
    ("reach", "its keys reach no scan it may filter"),
    ("creation side", "the creation side: not smaller, not computed once, or already waiting"),
    ("join:", "the join type drops no row of either side"),
)


def why_kind(reason):
    return next((kind for needle, kind in WHY_KINDS if needle in reason), "other: " + reason[:80])


def why_none(explain_text):
    """The kinds of reason (WHY_KINDS) of each join spark_sieve.explain lists without a filter."""
    _, _, joins = explain_text.partition("joins without a dynamic filter:")
    return [why_kind(line.split(": ", 1)[1]) for line in joins.splitlines() if ": " in line]


def wrong_answers(answers):
    """The variants whose rows differ from vanilla's (every variant must give vanilla's answer; rows
    compared as the TPC-DS test compares them, tests/answers.py)."""
    expected = answers.get("vanilla")
    if expected is None:
        return []
    return [v for v, rows in answers.items()
            if v != "vanilla" and diff_answers([tuple(r) for r in expected], [tuple(r) for r in rows]) is not None]


def error_text(e):
    """The first line of what the JVM (or Python) said, e.g. 'sieve.errors.SieveConfigException: ...'."""
    java = getattr(e, "java_exception", None)
    text = java.toString() if java is not None else str(e)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else type(e).__name__


def timings(spark, actions, runs, limit_s, warmup=1, cpu=None):
    """interleaved_times, except that an action that fails (a query Spark or spark-sieve rejects) is
    reported in the returned errors, name -> message, instead of stopping the benchmark."""
    errors = {}

    def guard(name, action):
        def run():
            if name in errors:
                return
            start = time.perf_counter()
            try:
                action()
            except Exception as e:  # noqa: BLE001 - reported in the table
                if time.perf_counter() - start >= limit_s:
                    raise  # cancelled at the limit: run_with_limit reports it as cut
                errors[name] = error_text(e)
        return run

    times = interleaved_times(spark, {n: guard(n, a) for n, a in actions.items()}, runs, limit_s, warmup, cpu)
    for name in errors:
        times[name] = None
    return times, errors


def median_of(times):
    return {name: (statistics.median(ts) if ts else None) for name, ts in times.items()}


def medians(spark, actions, runs, limit_s):
    """Median seconds of each action after one warm-up round, and the errors (see timings)."""
    times, errors = timings(spark, actions, runs, limit_s)
    return median_of(times), errors


def cell(times, errors, name, limit_s):
    return "failed" if name in errors else fmt(times.get(name), limit_s)


def plan_note(plan):
    if plan is None:
        return "-"
    final = plan.split("== Initial Plan ==")[0]
    joins = [name for op, name in (("BroadcastHashJoin", "BHJ"), ("SortMergeJoin", "SMJ"),
                                   ("ShuffledHashJoin", "SHJ"), ("BroadcastNestedLoopJoin", "BNLJ"))
             if op in final]
    note = "+".join(joins) or "no join"
    if "might_contain" in final:
        note += "+bloom"
    if "dynamicfilter" in final.lower():
        note += "+DF"
    return note


# ---- the star join -----------------------------------------------------------------------------

QUERY = ("SELECT d.cat, sum(f.amount) AS amount, count(*) AS n FROM bench_fact f JOIN bench_dim d ON f.k = d.k "
         "WHERE d.{column} < {n} GROUP BY d.cat")
FLOOR = "SELECT sum(amount), count(k) FROM bench_fact"


def bench_star(spark, args, variants):
    layouts, modes = args.layouts.split(","), args.modes.split(",")
    sels = [float(s) for s in args.selectivities.split(",")]
    paths = star_tables(spark, args.fact_rows, args.dim_rows, layouts, args.row_group_mb)
    spark.read.parquet(paths["dim"]).createOrReplaceTempView("bench_dim")
    all_variants = variant_settings(args)
    all_parts = list(MODES.values()) + list(all_variants.values())
    vanilla_settings = full_settings(all_variants["vanilla"], all_parts=all_parts)

    print(f"\n## Star join: fact {args.fact_rows:,} rows, dim {args.dim_rows:,} rows "
          f"(median of {args.runs} interleaved run(s) after a warm-up round, limit {args.limit:.0f}s per run)\n")
    print(f"dim: {parquet_shape(spark, paths['dim'])}")
    for layout in layouts:
        print(f"fact, {layout}: {parquet_shape(spark, paths[layout])}")
    print(f"filter: `d.{args.filter_column} < N`, keeping N/{CATS} of the dim rows"
          + (" (scattered over the key range)" if args.filter_column == "cat" else " (one contiguous key range)"))
    print(f"sieve variant: {', '.join(f'{k}={v}' for k, v in all_variants['sieve'].items())}\n")

    cols = list(variants) + ["floor", "vanilla/sieve", "bloom/sieve", "sieve/floor", "plans"]
    print("| layout | join | keeps | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols), flush=True)
    results, failures = {}, {}
    for layout in layouts:
        spark.read.parquet(paths[layout]).createOrReplaceTempView("bench_fact")
        floor_times, floor_errors = medians(spark, {"floor": collect(spark, FLOOR, vanilla_settings)},
                                            args.runs, args.limit)
        floor = floor_times["floor"]
        for mode in modes:
            for sel in sels:
                sql = QUERY.format(column=args.filter_column, n=round(sel * CATS))
                plans, answers = {}, {}
                actions = {v: collect(spark, sql, full_settings(MODES[mode], all_variants[v], all_parts=all_parts),
                                      plans, v, answers)
                           for v in variants}
                times, errors = medians(spark, actions, args.runs, args.limit)
                for v in wrong_answers(answers):
                    errors[v], times[v] = "WRONG ANSWER: its rows differ from vanilla Spark's", None
                times["floor"] = floor
                errors.update(floor_errors)
                for v, e in errors.items():
                    failures.setdefault(f"{v}: {e}", []).append(f"{layout}/{mode}/{sel * 100:g}%")
                results[(layout, mode, sel)] = times
                notes = " · ".join(f"{v} {plan_note(plans.get(v))}" for v in variants)
                cells = [cell(times, errors, v, args.limit) for v in list(variants) + ["floor"]]
                cells += [ratio(times.get("vanilla"), times.get("sieve")),
                          ratio(times.get("bloom"), times.get("sieve")),
                          ratio(times.get("sieve"), floor), notes]
                print(f"| {layout} | {mode} | {sel * 100:g}% | " + " | ".join(cells) + " |", flush=True)
    for failure, where in failures.items():
        print(f"\nfailed — {failure} (in {', '.join(where)})")
    return results


# Three dimensions, written least selective first (as a user might): qty (1..50) keeps 80%, channel keeps
# one of three, the dim 1%. Vanilla Spark joins in that order; spark-sieve puts all three keys on the fact scan.
STAR3 = ("SELECT d.cat, sum(f.amount) AS amount, count(*) AS n FROM bench_fact f "
         "JOIN bench_qty q ON f.qty = q.qty JOIN bench_channel c ON f.channel = c.channel "
         "JOIN bench_dim d ON f.k = d.k WHERE q.qty <= 40 AND c.channel = 'store' AND d.cat < 10 GROUP BY d.cat")


def bench_star3(spark, args, variants):
    """One row per layout and join mode: the three-dimension star join STAR3."""
    paths = star_tables(spark, args.fact_rows, args.dim_rows, args.layouts.split(","), args.row_group_mb)
    spark.read.parquet(paths["dim"]).createOrReplaceTempView("bench_dim")
    spark.range(1, 51).selectExpr("CAST(id AS INT) AS qty", "id % 5 AS size").createOrReplaceTempView("bench_qty")
    spark.createDataFrame([("store", 1), ("web", 2), ("catalog", 3)], "channel STRING, code INT") \
        .createOrReplaceTempView("bench_channel")
    all_variants = variant_settings(args)
    all_parts = list(MODES.values()) + list(all_variants.values())
    print("\n## Three-dimension star join (least selective dimension written first: qty 80%, channel 33%, "
          "dim 1%)\n")
    print("| layout | join | " + " | ".join(variants) + " | vanilla/sieve | bloom/sieve | plans |")
    print("|---|---|" + "---|" * (len(variants) + 3), flush=True)
    for layout in args.layouts.split(","):
        spark.read.parquet(paths[layout]).createOrReplaceTempView("bench_fact")
        for mode in args.modes.split(","):
            plans, answers = {}, {}
            actions = {v: collect(spark, STAR3, full_settings(MODES[mode], all_variants[v], all_parts=all_parts),
                                  plans, v, answers) for v in variants}
            times, errors = medians(spark, actions, args.runs, args.limit)
            for v in wrong_answers(answers):
                errors[v], times[v] = "WRONG ANSWER: its rows differ from vanilla Spark's", None
            notes = " · ".join(f"{v} {plan_note(plans.get(v))}" for v in variants)
            print(f"| {layout} | {mode} | " + " | ".join(cell(times, errors, v, args.limit) for v in variants)
                  + f" | {ratio(times.get('vanilla'), times.get('sieve'))} | {ratio(times.get('bloom'), times.get('sieve'))}"
                  + f" | {notes} |", flush=True)
            for v, e in errors.items():
                print(f"\nfailed — {v}: {e} ({layout}/{mode})")


def _check(value, ok, text):
    if value is None:
        return f"not measured ({text})"
    return f"{'met' if ok(value) else 'NOT met'} ({text}: {value:.2f})"


def goals(results):
    """The star join's goals (vs vanilla, forced bloom and the floor), judged from this run's medians (report only)."""
    print("\n## Goals (from the numbers above)\n")
    layouts = sorted({layout for layout, _, _ in results}, key=lambda x: (x != "random", x))
    low, high = min(SELECTIVITIES), max(SELECTIVITIES)

    def r(a, b):
        return a / b if a is not None and b is not None else None

    for layout in layouts:
        t = results.get((layout, "smj", low))
        if t is None:
            print(f"- {layout}, 0.1% under sort-merge: not measured (needs --modes smj and 0.001 in --selectivities)")
            continue
        print(f"- {layout}, 0.1% under sort-merge: sieve ≥ 5x faster than vanilla — "
              + _check(r(t.get("vanilla"), t.get("sieve")), lambda x: x >= 5, "vanilla/sieve"))
        print(f"- {layout}, 0.1% under sort-merge: sieve ≥ 1.5x faster than forced bloom — "
              + _check(r(t.get("bloom"), t.get("sieve")), lambda x: x >= 1.5, "bloom/sieve"))
        print(f"- {layout}, 0.1% under sort-merge: within 2x of the bare-scan floor — "
              + _check(r(t.get("sieve"), t.get("floor")), lambda x: x <= 2, "sieve/floor"))
    at_high = {k: v for k, v in results.items() if k[2] == high}
    if not at_high:
        print("- 50%: not measured (needs 0.5 in --selectivities)")
    for (layout, mode, _), t in sorted(at_high.items()):
        print(f"- {layout}, {mode}, 50%: no more than 5% slower than vanilla — "
              + _check(r(t.get("sieve"), t.get("vanilla")), lambda x: x <= 1.05, "sieve/vanilla"))


# ---- TPC-DS and TPC-H ----------------------------------------------------------------------------

def _filter_count(plan_text):
    """(ran, planned): dynamic filter operators in a final plan's text and in its initial plan's, each once
    (one inside a broadcast is printed again under every filter that reads that broadcast's keys). When AQE
    found the result empty and replaced the plan by an EmptyRelation (TPC-DS q17 at sf10: a filtered stage
    came out empty first), the filters that ran are only in the initial plan. A filter planned and gone
    from the final plan still changed how the query ran: its scan's stage waited for its keys, and AQE
    re-planned the join once they were known (TPC-DS q37 partitioned: catalog_sales, whose filter made it
    wait for the other side's shuffle, then read under a broadcast join and never shuffled)."""
    # the outer plan's marker starts its line; a DPP subquery's own adaptive plan prints an indented one
    # inside the final plan (cutting there put the filters below it among the planned ones)
    final, _, initial = plan_text.partition("\n+- == Initial Plan ==")

    def count(text):
        return len({line.split("DynamicFilter ", 1)[1] for line in text.splitlines() if "DynamicFilter " in line})
    planned = count(initial) if initial else count(final)
    return (count(final) or (planned if "EmptyRelation" in final else 0)), planned


# what differs between two runs of one plan: expression ids (#12L), exchange and subquery ids, AQE's stage
# numbers and whole-stage-codegen ids, which depend on what was planned before
_PLAN_IDS = re.compile(r"#\d+L?|\[id=#?\d+\]|plan_id=\d+|(?<=QueryStage )\d+|\*\(\d+\)|(?<=\bid=)\d+")


def same_plan(a, b):
    """Whether two executed plans' texts are one plan, ids aside: then a gap between their times is the
    machine's run-to-run noise (or planning time, which the bench cannot tell apart), not a plan's cost."""
    return a is not None and b is not None and _PLAN_IDS.sub("", a) == _PLAN_IDS.sub("", b)


def _dfs_cell(counts):
    ran, planned = counts
    return "" if not planned and not ran else str(ran) if ran >= planned else f"{ran} ({planned} planned)"


def _suite(name, sf, spark, partitioned=False):
    """(title, {number: sql}, skipped) of a query suite (tests/tpcds.py or tests/tpch.py), its data
    generated once under .cache/bench/ and registered as temp views; None with the reason if it cannot run."""
    try:
        suite = importlib.import_module(name)  # tests/tpcds.py or tests/tpch.py
    except ImportError as e:
        return None, str(e)
    start = time.perf_counter()
    if name == "tpch":
        tpch = suite
        out_dir = tpch.generate(os.path.join(DATA, f"tpch_sf{sf:g}"), sf, parts=max(2, int(sf * 4)))
        tpch.register(spark, out_dir)
        texts, skipped, title = tpch.queries(strip_limit=False), {}, "TPC-H"
    else:
        tpcds = suite
        out_dir = tpcds.generate(os.path.join(DATA, f"tpcds_sf{sf:g}"), sf)
        part_dir = (tpcds.generate_partitioned(spark, out_dir, os.path.join(DATA, f"tpcds_sf{sf:g}_partitioned"), sf)
                    if partitioned else None)
        tpcds.register(spark, out_dir, part_dir)
        texts, skipped = tpcds.queries(strip_limit=False), tpcds.SKIPPED
        title = "TPC-DS" + (" (fact tables partitioned by their date key)" if partitioned else "")
    print(f"data: {out_dir} (generated or found in {time.perf_counter() - start:.1f}s; it caches)\n", flush=True)
    return (title, texts, skipped), None


def bench_suite(spark, name, sf, args, variants, only=None, partitioned=False):
    """Every query of the suite under each variant, interleaved: once (after a warm-up round: the
    first run compiles the generated code, which Spark then caches), and --runs times when a spark-sieve
    plan of it holds a dynamic filter (the queries whose plan it changes; the first run counts as one), or
    --short-runs times when that query is short, and --recheck more rounds when it looks >10% slower (a
    sitting's few runs swing by more). Lists the queries more than 10% slower than vanilla."""
    print(f"\n## {name.upper()} at scale factor {sf:g} (join mode: Spark's defaults; queries whose sieve plan "
          f"changes: median of {args.runs} interleaved runs, {args.short_runs} under {args.short_under:g}s, "
          f"the others 1, after a warm-up round; limit "
          f"{args.limit:.0f}s per run)\n")
    suite, error = _suite(name, sf, spark, partitioned)
    if suite is None:
        print(f"not run: the suite's module cannot be imported ({error})")
        return
    title, texts, skipped = suite
    print(f"### {title}\n")
    all_variants = variant_settings(args)
    all_parts = list(MODES.values()) + list(all_variants.values())
    settings = {v: full_settings(all_variants[v], all_parts=all_parts) for v in variants}
    # sieve-nodf/sieve: what the filters themselves gain; sieve/sieve-alt: what --alt-conf gains
    rat = [(a, b) for a, b in (("vanilla", "sieve"), ("bloom", "sieve"), ("vanilla", "sieve-eager"),
                               ("sieve-nodf", "sieve"), ("sieve", "sieve-alt"))
           if a in variants and b in variants]
    sieves = [v for v in variants if v.startswith("sieve")]

    # the JVM's CPU time (driver and local executors) beside wall time: work done, apart from time spent waiting
    cpu_pair = ("vanilla", "sieve") if "vanilla" in variants and "sieve" in variants else None
    print("| query | runs | " + " | ".join(variants) + "".join(f" | {a}/{b}" for a, b in rat)
          + (" | CPU vanilla/sieve" if cpu_pair else "") + "".join(f" | DFs ({v})" for v in sieves) + " |")
    print("|---|---|" + "---|" * (len(variants) + len(rat) + bool(cpu_pair) + len(sieves)), flush=True)
    cpu_totals = {v: 0.0 for v in variants}
    totals, measured, cut, failed, skipped_names, with_df = {v: 0.0 for v in variants}, 0, 0, [], [], {}
    planned_only = {}  # a filter in the initial plan only (see _filter_count)
    changed_totals, changed_measured = {v: 0.0 for v in variants}, 0
    # vanilla/sieve < 0.9, by what the sieve plan changed: "filter", "plan" (another plan without one), "none"
    slower = {"filter": [], "plan": [], "none": []}
    same_as_vanilla = []  # the queries whose sieve plan is vanilla's, ids aside
    other_plan = []  # the queries whose sieve plan is not vanilla's and holds neither a filter nor a wait
    why = {}  # kind of reason -> joins of the sieve plans that got no filter (why_none)
    rechecked = []  # the queries --recheck ran again, their ratio before and after
    run_count = 0  # the queries run (a subset with --tpcds-queries / --tpch-queries)
    for number, sql in sorted(texts.items()):
        name_q = f"q{number}" if isinstance(number, int) else str(number)
        if only and str(number) not in only.split(","):
            continue
        if number in skipped or name_q in skipped:
            skipped_names.append(name_q)
            continue
        run_count += 1
        plans, answers, frames = {}, {}, {}
        actions = {v: collect(spark, sql, settings[v], plans, v, answers, frames if v == "sieve" else None)
                    for v in variants}
        cpus = {}
        all_times, errors = timings(spark, actions, 1, args.limit, cpu=cpus)
        for v in wrong_answers(answers):
            errors[v], all_times[v] = "WRONG ANSWER: its rows differ from vanilla Spark's", None
        dfs = {v: _filter_count(plans.get(v, "")) for v in sieves}
        # a scan held back for DPP's keys (AwaitBroadcasts in the initial plan) changes how it runs too
        def changes(v):
            return any(dfs[v]) or "AwaitBroadcasts" in plans.get(v, "")
        changed = any(changes(v) for v in sieves)  # any sieve variant's plan: more runs for all
        def more_runs(n):
            more, errs = timings(spark, actions, n, args.limit, warmup=0, cpu=cpus)
            merged = {v: None if all_times[v] is None or more[v] is None else all_times[v] + more[v]
                      for v in variants}
            for v in wrong_answers(answers):
                errs[v], merged[v] = "WRONG ANSWER: its rows differ from vanilla Spark's", None
            return merged, errs

        def short(t):  # by the medians `t`: short queries vary most between runs and cost least
            return all(x is not None and x < args.short_under for x in t.values())

        def sieve_slower(t):  # a query cut at the limit (None) is not compared
            return "vanilla" in variants and "sieve" in variants and t["vanilla"] and t["sieve"] \
                and t["vanilla"] / t["sieve"] < 0.9

        runs = 1
        if changed and args.runs > 1 and not errors:
            # the first run counts as one of them
            runs = max(args.runs, args.short_runs) if short(median_of(all_times)) else args.runs
            all_times, errors = more_runs(runs - 1)
        times = median_of(all_times)
        first_look = ""
        if args.recheck and not errors and sieve_slower(times):
            # a query that looks >10% slower gets more rounds before it is called slower: a sitting's 3 runs
            # of a 40 s query swing by more than that (the first figure is kept in the list)
            # (a short query three times as many — TPC-DS q12 partitioned, one plan for both, 0.85x in 3 runs,
            # its 9 runs of vanilla 0.87-1.98 s)
            rounds = args.recheck * (3 if short(times) else 1)
            first_look = f"{ratio(times['vanilla'], times['sieve'])} in {runs} run(s), then "
            all_times, errors = more_runs(rounds)
            runs += rounds
            times = median_of(all_times)
        cpu_med = {v: statistics.median(cpus[v]) if cpus.get(v) and all_times.get(v) else None for v in variants}
        if first_look and not errors:
            rechecked.append(f"{name_q} {first_look}{ratio(times['vanilla'], times['sieve'])} in {runs}")
        for kind in why_none(sieve.explain(frames["sieve"], print_it=False) if "sieve" in frames else ""):
            why[kind] = why.get(kind, 0) + 1
        same = "vanilla" in plans and same_plan(plans.get("vanilla"), plans.get("sieve"))
        if same:
            same_as_vanilla.append(name_q)
        elif "vanilla" in plans and "sieve" in plans and not changes("sieve"):
            other_plan.append(name_q)
        if sieve_slower(times):  # by the sieve variant's own plan (not another variant's filters)
            what = "filter" if dfs["sieve"][0] else "none" if same else "plan"
            slower[what].append(f"{name_q} {ratio(times['vanilla'], times['sieve'])}")
        for v in sieves:
            if dfs[v][0]:
                with_df.setdefault(v, []).append(name_q)
            elif dfs[v][1]:
                planned_only.setdefault(v, []).append(name_q)
        failed += [f"{name_q} under {v}: {e}" for v, e in errors.items()]
        if not errors and all(times[v] is not None for v in variants):
            measured += 1
            for v in variants:
                totals[v] += times[v]
                cpu_totals[v] += cpu_med[v] or 0.0
                if changed:
                    changed_totals[v] += times[v]
            changed_measured += 1 if changed else 0
        else:
            cut += 0 if errors else 1
        print(f"| {name_q} | {runs} | " + " | ".join(cell(times, errors, v, args.limit) for v in variants)
              + "".join(f" | {ratio(times[a], times[b])}" for a, b in rat)
              + (f" | {ratio(cpu_med[cpu_pair[0]], cpu_med[cpu_pair[1]])}" if cpu_pair else "")
              + "".join(f" | {_dfs_cell(dfs[v])}" for v in sieves) + " |", flush=True)
        if errors and args.fail_fast:
            print(f"\n--fail-fast: stopped after {name_q}")
            break
    for label, t, count in (("total", totals, measured), ("queries whose plan sieve changes (a filter or a wait for DPP)", changed_totals, changed_measured)):
        print(f"| **{label}** ({count} measured) | | "
              + " | ".join(fmt(t[v], args.limit) if measured else "-" for v in variants)
              + "".join(f" | {ratio(t[a] or None, t[b] or None)}" for a, b in rat)
              + (f" | {ratio(cpu_totals[cpu_pair[0]] or None, cpu_totals[cpu_pair[1]] or None)}"
                 if cpu_pair and label == "total" else (" |" if cpu_pair else ""))
              + " |" * len(sieves) + " |")
    if cut:
        print(f"\n{cut} query(ies) cut at the limit under some variant (left out of the totals).")
    if failed:
        print("\nfailed (left out of the totals):\n" + "\n".join(f"- {f}" for f in failed))
    for v in sieves:
        names = with_df.get(v, [])
        print(f"\nqueries whose {v} plan holds a dynamic filter: {len(names)} of {run_count}"
              + (f" ({', '.join(names)})" if names else ""))
        if planned_only.get(v):
            print(f"\nqueries whose {v} initial plan held a filter that the final plan does not: "
                  f"{len(planned_only[v])} ({', '.join(planned_only[v])})")
    if why:
        print("\nequi-joins of the sieve plans without a filter, by spark_sieve.explain's reason:\n"
              + "\n".join(f"- {n}: {kind}" for kind, n in sorted(why.items(), key=lambda kv: -kv[1])))
    if rechecked:
        print(f"\n{args.recheck} more rounds for the queries that looked >10% slower (vanilla/sieve): "
              f"{'; '.join(rechecked)}")
    if "vanilla" in variants and "sieve" in variants:
        print(f"\nqueries whose sieve plan is vanilla's, ids aside: {len(same_as_vanilla)} of {run_count}; "
              f"another plan with neither a filter nor a wait: {', '.join(other_plan) or 'none'}")
        print(f"\nmore than 10% slower than vanilla: with a filter: {', '.join(slower['filter']) or 'none'}; "
              f"another plan without a filter (a wait for DPP's keys, a filter planned then dropped): "
              f"{', '.join(slower['plan']) or 'none'}; vanilla's own plan (ids aside: run-to-run noise or "
              f"planning time): {', '.join(slower['none']) or 'none'}")
    if skipped_names:
        print(f"\nskipped: {', '.join(skipped_names)}")
    return len(failed)


# ---- main --------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fact-rows", type=int, default=30_000_000)
    p.add_argument("--dim-rows", type=int, default=3_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--short-runs", type=int, default=5,
                   help="suites: runs of a query whose plan changes and whose first run took under --short-under "
                        "seconds in every variant (short queries vary most between runs)")
    p.add_argument("--short-under", type=float, default=3.0)
    p.add_argument("--recheck", type=int, default=0, metavar="ROUNDS",
                   help="suites: a query more than 10%% slower than vanilla after its runs gets ROUNDS more "
                        "interleaved rounds (3 x ROUNDS when its medians are under --short-under seconds), and is judged "
                        "on the median of all its runs (both figures listed)")
    p.add_argument("--limit", type=float, default=600, help="seconds before a run is cut")
    p.add_argument("--layouts", default="random,clustered", help="fact layouts (random, clustered)")
    p.add_argument("--modes", default=",".join(MODES), help=f"join modes ({', '.join(MODES)})")
    p.add_argument("--selectivities", default=",".join(f"{s:g}" for s in SELECTIVITIES),
                   help="shares of dim rows the filter keeps (multiples of 0.001)")
    p.add_argument("--variants", default="vanilla,bloom,sieve", help=f"which variants ({', '.join(VARIANTS)})")
    p.add_argument("--alt-conf", default="",
                   help="comma-separated key=value settings the sieve-alt variant adds to the sieve variant's")
    p.add_argument("--sieve-conf", default=DEFAULT_SIEVE_CONF,
                   help="comma-separated key=value settings the sieve variant adds to spark.sieve.enabled=true "
                        f"(default {DEFAULT_SIEVE_CONF}; '' = the master switch alone)")
    p.add_argument("--filter-column", default="cat", choices=["cat", "band"],
                   help="cat: kept keys scattered over the key range; band: one contiguous key range")
    p.add_argument("--row-group-mb", type=float, default=8, help="Parquet row group size of the fact files")
    p.add_argument("--tpcds", type=float, metavar="SF", help="add the TPC-DS section at this scale factor")
    p.add_argument("--tpcds-queries", help="comma-separated query numbers (default: all 99)")
    p.add_argument("--partitioned", action="store_true",
                   help="TPC-DS with the fact tables partitioned by their date key (Spark's DPP acts too)")
    p.add_argument("--tpch", type=float, metavar="SF", help="add the TPC-H section (tpchgen-cli data) at this scale factor")
    p.add_argument("--tpch-queries", help="comma-separated query numbers (default: all 22)")
    p.add_argument("--star3", action="store_true", help="add the three-dimension star join")
    p.add_argument("--no-star", action="store_true", help="skip the star-join section (e.g. TPC-DS alone)")
    p.add_argument("--memory", default="6g", help="driver memory")
    p.add_argument("--fail-fast", action="store_true",
                   help="suites: stop at the first query that fails or gives another answer than vanilla")
    add_jar_argument(p)
    args = p.parse_args(argv)

    variants = [v for v in args.variants.split(",") if v]
    layouts = args.layouts.split(",")
    if "sieve-alt" in variants and not args.alt_conf:
        p.error("--variants sieve-alt needs --alt-conf (the settings it adds to the sieve variant's)")
    bad = ([v for v in variants if v not in VARIANTS]
           + [f"{flag} entry {kv.strip()!r} (not key=value)" for flag, conf in
              (("--sieve-conf", args.sieve_conf), ("--alt-conf", args.alt_conf))
              for kv in conf.split(",") if kv.strip() and "=" not in kv]
           + [m for m in args.modes.split(",") if m not in MODES]
           + [x for x in layouts if x not in ("random", "clustered")]
           + [s for s in args.selectivities.split(",")
              if not 0 < float(s) <= 1 or abs(float(s) * CATS - round(float(s) * CATS)) > 1e-9])
    if bad:
        p.error(f"unknown or invalid: {', '.join(bad)}")

    spark = session("spark-sieve dynamic_filter bench", memory=args.memory, jar=args.jar)
    status = sieve.status(spark)
    print(f"# dynamic_filter bench: {' '.join(sys.argv)}")
    print(f"spark-sieve {sieve.__version__} (jar {status.get('version')}), Spark {spark.version}, "
          f"local[2], {os.cpu_count()} cores, driver memory {args.memory}" + jar_note(args.jar))
    start = time.perf_counter()
    failures = 0
    if not args.no_star:
        goals(bench_star(spark, args, variants))
    if args.star3:
        bench_star3(spark, args, variants)
    if args.tpcds:
        failures += bench_suite(spark, "tpcds", args.tpcds, args, variants, args.tpcds_queries,
                                args.partitioned) or 0
    if args.tpch:
        failures += bench_suite(spark, "tpch", args.tpch, args, variants, args.tpch_queries) or 0
    print(f"\n(total {time.perf_counter() - start:.0f}s)")
    spark.stop()
    if failures:
        sys.exit(f"{failures} query run(s) failed or gave another answer than vanilla Spark (listed above)")


if __name__ == "__main__":
    main()
