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
  --formats parquet,delta,iceberg: the fact (each layout) also as a Delta table with deletion vectors and an
           Iceberg v2 table with merge-on-read deletes (bench/format_tables.py: the same rows and file count,
           then the rows of `qty = 50` deleted), on a Spark line with releases of both:
           dev/bench --spark 4.0 dynamic_filter --formats parquet,delta,iceberg --layouts random,clustered
           The `files skipped` column says how many of the fact's files the sieve variant's filter skipped
           and what decided it: the table's own statistics (the Delta log, Iceberg's manifests: no footer
           read) or Parquet footers.

Join modes (set before every run, with the variant's settings, since runs interleave):
  default  Spark's defaults (AQE on: it may turn a sort-merge join into a broadcast join at run time)
  smj      sort-merge forced: spark.sql.autoBroadcastJoinThreshold=-1 and
           spark.sql.adaptive.autoBroadcastJoinThreshold=-1 (AQE cannot convert either)
Variants:
  vanilla  spark.sieve.enabled=false, everything else Spark's defaults
  bloom    spark.sieve.enabled=false, Spark's runtime bloom filter forced on (application-side threshold
           1b, creation-side threshold 1g); it only fires on joins Spark plans as shuffle joins
  sieve    spark.sieve.enabled=true plus --sieve-conf (default spark.sieve.dynamicFilter.enabled=true)
  sieve-eager  the same with stageStartBytes=0 and minSizeRatio=1: a filter wherever the scan outweighs
           what its creation side reads (shows what the cost model protects; TPC-DS section)
  sieve-nodf  the sieve variant with spark.sieve.dynamicFilter.enabled=false: what the extension costs a
           query apart from its filters (planning, the other rules) — tells a filter's cost from noise
  sieve-alt  the sieve variant plus --alt-conf: one setting's effect, measured in the same sitting
  oracle   the best any runtime filter can do (bench/oracle.py): vanilla's settings, the star join with `f.k`
           restricted to the kept keys written in by hand (one range where contiguous, an IN list otherwise);
           in the suites, each table a sieve filter kept rows of restricted to that filter's keys (needs sieve)
Ratios: vanilla/sieve and bloom/sieve above 1 = spark-sieve faster; sieve/oracle and sieve/floor = how close to
the hand-written filter and to a bare scan (1 = as fast).
--files N,...: the fact written in each number of files, in every format (over 1,000 in commits of 1,000:
Delta's log with checkpoints, Iceberg's with a manifest a commit), for the metadata's scale:
           dev/bench --spark 4.0 dynamic_filter --fact-rows 8000000 --dim-rows 800000 --formats parquet,delta,iceberg \
               --files 8,20000 --modes smj --selectivities 0.001,0.5 --variants vanilla,sieve,oracle --runs 3
The `driver` columns: Spark's planning (vanilla, sieve) and the sieve filters' own driver time (keys,
decisions, file pruning: bench/driver_time.py), and what sieve adds on the driver as a share of its query.
Each variant's rows are checked against vanilla's (as tests/answers.py compares them): a different answer is
reported as WRONG ANSWER and not timed. (The TPC-DS section does not check: its LIMITs without a total
order may pick different rows; tests/test_tpcds.py compares every query's full answer.)
The `plans` column is read from each variant's final (adaptive) plan: the join Spark ran (BHJ broadcast
hash, SMJ sort-merge, SHJ shuffled hash), +bloom when a runtime bloom filter is in it, +DF when a
spark-sieve dynamic filter is.

--tpcds SF adds a TPC-DS section (data and queries from tests/tpcds.py, cached under .cache/bench/;
--partitioned with the fact tables partitioned by their date key; --tpcds-format delta|iceberg with the fact
tables in that format, written once: dev/bench --spark 4.0 dynamic_filter --no-star --tpcds 1 --tpcds-format
iceberg), --tpch SF a TPC-H section (tests/tpch.py:
tpchgen-cli Parquet, the 22 queries); --layout date-sorted with either: their fact tables sorted by their date
key (TPC-DS's seven, TPC-H's lineitem and orders), as loaders that cluster by date leave them, in as many files
and row groups as generated; --star3 a three-dimension star join over the star fact; --date-join a fact of
--date-rows rows sorted by a yyyymmdd date key over seven years, joined to one year (and one month) of its date
dimension, alone and with two more dimensions, Spark's default joins (bench/date_join.py); --no-star
leaves out the star join. Suites: each query's time under the chosen variants (join mode: Spark's defaults;
the queries as the suite writes them, LIMIT included), run once, and --runs times when a sieve plan of it
holds a dynamic filter (--short-runs times when that query took under --short-under seconds; --recheck
ROUNDS more rounds when it then looks below 0.95x vanilla; when its medians are short, three times as many and
more, until its runs fill 20 s per round, at most ten times as many; those rounds run vanilla's settings twice, and
a query still below 0.95x is listed apart when sieve's run was the slowest of its round's three too often to be
chance); the
ratios, the totals (all, and the queries with a filter), which queries got one, which ran below 0.95x, which >10% slower (by
whether the sieve plan is vanilla's, ids aside), and why the sieve plans' other joins got none (spark_sieve.explain's
reasons, counted by kind); with vanilla and sieve, also the ratio of the JVM's CPU seconds (median per query, local
mode; read from /proc).

    dev/bench dynamic_filter --no-star --tpch 10 --variants vanilla,bloom,sieve --runs 3
    dev/bench dynamic_filter --no-star --tpcds 10 --partitioned --variants vanilla,bloom,sieve --runs 3
    dev/bench dynamic_filter --no-star --tpcds 1 --tpch 1 --layout date-sorted --variants vanilla,sieve --recheck 1
    dev/bench dynamic_filter --no-star --date-join --variants vanilla,sieve --runs 5
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))  # answers, tpcds

from common import add_jar_argument, jar_note, ratio, session  # noqa: E402
from format_tables import FORMATS  # noqa: E402
from format_tables import session_settings as format_settings  # noqa: E402
# tests/test_bench.py reads the plan reading here, as bench.same_plan, bench.why_none, bench.WHY_KINDS
from plan_reading import (  # noqa: E402, F401
    FOOTERS, RUNTIME_FILTERING, WHY_KINDS, file_pruning, files_note, plan_note, same_plan, why_kind, why_none)
from runs import (  # noqa: E402
    DEFAULT_SIEVE_CONF, MODES, VARIANTS, PlanTexts, cell, collect, full_settings, medians, variant_settings,
    wrong_answers)
from star_join import SELECTIVITIES, bench_star, goals  # noqa: E402
from star_tables import CATS, CLUSTERED_FILES, FACT_FILES, star_tables  # noqa: E402
from suites import bench_suite  # noqa: E402
from date_join import bench_date_join  # noqa: E402

import spark_sieve as sieve  # noqa: E402

SELECTIVITIES = [0.001, 0.01, 0.1, 0.5]

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
            plans, answers = PlanTexts(), {}
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
                   help="suites: a query below 0.95x vanilla after its runs gets ROUNDS more "
                        "interleaved rounds (when its medians are under --short-under seconds, 3 x ROUNDS and more until its "
                        "runs fill 20 s per round, at most 10 x ROUNDS), and is judged "
                        "on the median of all its runs (both figures listed); vanilla runs twice in those rounds: "
                        "its two series' ratio is listed beside, and how often sieve's run was the slowest of a "
                        "round's three")
    p.add_argument("--limit", type=float, default=600, help="seconds before a run is cut")
    p.add_argument("--layouts", "--layout", default="random,clustered",
                   help=f"fact layouts: random (8 files), clustered (sorted by k into {CLUSTERED_FILES} files) for the "
                        "star join; date-sorted for --tpcds / --tpch (each fact table sorted by its date key, the same "
                        "files and row groups as the generated ones)")
    p.add_argument("--files", default="",
                   help="the star join's fact written in each of these numbers of files (comma-separated, e.g. "
                        "8,1000,20000; over 1,000 in commits of 1,000 files: Delta checkpoints, Iceberg manifests), "
                        f"in every format and layout; default: {FACT_FILES} random, {CLUSTERED_FILES} clustered")
    p.add_argument("--formats", "--format", default="parquet",
                   help=f"the fact's table formats ({', '.join(FORMATS)}; Delta and Iceberg where the Spark line has "
                        "a release: dev/bench --spark 4.0 ...)")
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
    p.add_argument("--tpcds-format", choices=[f for f in FORMATS if f != "parquet"],
                   help="TPC-DS with the fact tables in this table format (Iceberg: v2, partitioned by truncated date "
                        "key; dimensions stay Parquet): dev/bench --spark 4.0 ...")
    p.add_argument("--partitioned", action="store_true",
                   help="TPC-DS with the fact tables partitioned by their date key (Spark's DPP acts too)")
    p.add_argument("--tpch", type=float, metavar="SF", help="add the TPC-H section (tpchgen-cli data) at this scale factor")
    p.add_argument("--tpch-queries", help="comma-separated query numbers (default: all 22)")
    p.add_argument("--star3", action="store_true", help="add the three-dimension star join")
    p.add_argument("--date-join", action="store_true",
                   help="add the date join: a fact sorted by its date key joined to one year / month of its date "
                        "dimension, alone and with two more dimensions (bench/date_join.py)")
    p.add_argument("--date-rows", type=int, default=12_000_000, help="the date join's fact rows")
    p.add_argument("--no-star", action="store_true", help="skip the star-join section (e.g. TPC-DS alone)")
    p.add_argument("--no-floor", action="store_true",
                   help="the star join without its bare-scan floor (a scan of a table of many files costs minutes)")
    p.add_argument("--memory", default="6g", help="driver memory")
    p.add_argument("--fail-fast", action="store_true",
                   help="suites: stop at the first query that fails or gives another answer than vanilla")
    add_jar_argument(p)
    args = p.parse_args(argv)

    variants = [v for v in args.variants.split(",") if v]
    # date-sorted is the suites' layout (their facts sorted by date key); random and clustered the star join's
    layouts = args.layouts.split(",")
    date_sorted = "date-sorted" in layouts
    args.layouts = ",".join(x for x in layouts if x != "date-sorted")
    if "oracle" in variants and (args.tpcds or args.tpch) and "sieve" not in variants:
        p.error("--variants oracle in a suite needs sieve (the oracle writes in the keys sieve's filters kept)")
    if "sieve-alt" in variants and not args.alt_conf:
        p.error("--variants sieve-alt needs --alt-conf (the settings it adds to the sieve variant's)")
    bad = ([v for v in variants if v not in VARIANTS]
           + [f"{flag} entry {kv.strip()!r} (not key=value)" for flag, conf in
              (("--sieve-conf", args.sieve_conf), ("--alt-conf", args.alt_conf))
              for kv in conf.split(",") if kv.strip() and "=" not in kv]
           + [m for m in args.modes.split(",") if m not in MODES]
           + [x for x in layouts if x not in ("random", "clustered", "date-sorted")]
           + [f for f in args.formats.split(",") if f not in FORMATS]
           + [s for s in args.selectivities.split(",")
              if not 0 < float(s) <= 1 or abs(float(s) * CATS - round(float(s) * CATS)) > 1e-9])
    if args.tpcds_format and args.partitioned:
        bad.append("--tpcds-format with --partitioned (the format tables are partitioned their own way)")
    if date_sorted and (args.partitioned or args.tpcds_format):
        bad.append("--layout date-sorted with --partitioned or --tpcds-format (one layout of the facts at a time)")
    if date_sorted and not (args.tpcds or args.tpch):
        bad.append("--layout date-sorted without --tpcds or --tpch (it is the layout of their fact tables)")
    if not args.no_star and not args.layouts:
        bad.append("the star join with no layout of its own (random, clustered; or --no-star)")
    if bad:
        p.error(f"unknown or invalid: {', '.join(bad)}")

    spark = session("spark-sieve dynamic_filter bench", memory=args.memory, jar=args.jar,
                    settings=format_settings(args.formats.split(",") + [args.tpcds_format or "parquet"]))
    status = sieve.status(spark)
    print(f"# dynamic_filter bench: {' '.join(sys.argv)}")
    print(f"spark-sieve {sieve.__version__} (jar {status.get('version')}), Spark {spark.version}, "
          f"local[2], {os.cpu_count()} cores, driver memory {args.memory}" + jar_note(args.jar))
    start = time.perf_counter()
    failures = 0
    if not args.no_star:
        goals(*bench_star(spark, args, variants))
    # the oracle is the star join's and the suites' (the date join times its range by hand as a query of its own)
    others = [v for v in variants if v != "oracle"]
    if args.star3:
        bench_star3(spark, args, others)
    if args.date_join:
        bench_date_join(spark, args, others)
    if args.tpcds:
        failures += bench_suite(spark, "tpcds", args.tpcds, args, variants, args.tpcds_queries,
                                args.partitioned, args.tpcds_format, date_sorted) or 0
    if args.tpch:
        failures += bench_suite(spark, "tpch", args.tpch, args, variants, args.tpch_queries,
                                date_sorted=date_sorted) or 0
    print(f"\n(total {time.perf_counter() - start:.0f}s)")
    spark.stop()
    if failures:
        sys.exit(f"{failures} query run(s) failed or gave another answer than vanilla Spark (listed above)")


if __name__ == "__main__":
    main()
