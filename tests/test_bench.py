"""The benchmark's own reading of plans (bench/dynamic_filter.py): what it calls the same plan as vanilla's, and
how it counts spark_sieve.explain's reasons for a join without a filter — the figures a note quotes."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

import dynamic_filter as bench  # noqa: E402

PLAN = """AdaptiveSparkPlan isFinalPlan=true
+- == Final Plan ==
   ResultQueryStage 21
   +- *(19) Project [customer_id#123L, name#7]
      +- BroadcastQueryStage 5
         +- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, true]),false), [plan_id=312]
            +- *(3) Filter (isnotnull(d_year#45) AND (d_year#45 = 2001))
"""


def test_the_same_plan_apart_from_ids():
    renumbered = (PLAN.replace("#123L", "#9L").replace("#45", "#46").replace("plan_id=312", "plan_id=17")
                  .replace("Stage 21", "Stage 3").replace("Stage 5", "Stage 8").replace("*(19)", "*(2)"))
    assert bench.same_plan(PLAN, renumbered)


def test_another_plan_is_not_the_same():
    assert not bench.same_plan(PLAN, PLAN.replace("d_year#45 = 2001", "d_year#45 = 2002"))
    assert not bench.same_plan(PLAN, PLAN.replace("BroadcastQueryStage", "ShuffleQueryStage"))
    assert not bench.same_plan(PLAN, None)


def test_the_first_line_unlike_vanilla_is_named():
    import plan_reading
    other = PLAN.replace("d_year#45 = 2001", "d_year#45 = 2002").replace("*(3)", "*(4)")
    assert plan_reading.first_difference(PLAN, other) == \
        "+- Filter (isnotnull(d_year) AND (d_year = 2002))"
    assert plan_reading.first_difference(PLAN, PLAN.replace("*(19)", "*(7)")) is None


def test_a_short_query_is_rechecked_until_its_runs_fill_the_time():
    import suites
    assert suites.recheck_rounds(1, {"vanilla": 30.0, "sieve": 32.0}, short=False) == 1
    assert suites.recheck_rounds(1, {"vanilla": 2.5, "sieve": 2.5}, short=True) == 4  # 5 s a round: 4 fill 20 s
    assert suites.recheck_rounds(1, {"vanilla": 8.0, "sieve": 9.0}, short=True) == 3  # at least 3 x ROUNDS
    assert suites.recheck_rounds(1, {"vanilla": 0.4, "sieve": 0.5}, short=True) == 10  # 0.9 s a round: at most 10
    assert suites.recheck_rounds(2, {"vanilla": 1.9, "sieve": 2.1}, short=True) == 10  # 2 rounds' 40 s: 10 of 4 s


def test_a_slowdown_is_told_from_noise_round_by_round():
    import suites
    # sieve's run the slowest of the three in every one of 5 rounds: 1 in 243 by chance
    k, n, chance = suites.slowest_chance([1.0] * 5, [1.1] * 5, [1.2] * 5)
    assert (k, n) == (5, 5) and abs(chance - 1 / 243) < 1e-9
    # in 3 of 6: what chance gives
    k, n, chance = suites.slowest_chance([1, 1, 1, 1, 1, 1], [1, 2, 1, 2, 1, 2], [2, 1, 1.5, 1, 0.5, 3])
    assert (k, n) == (3, 6) and chance > suites.NOISE_CHANCE
    # no round: nothing to tell
    assert suites.slowest_chance([], [], []) == (0, 0, 1.0)


def test_reasons_counted_by_kind():
    explain = """no BulkFilter in this plan

joins without a dynamic filter:
  BroadcastHashJoin Inner on [ss_item_sk#393L] = [i_item_sk#249L]: the scan of store_sales reads 20914057 bytes once dynamic partition pruning has run (150 of 1823 files), less than the 31457280 bytes it would wait for its keys: its creation side reads 23068672 bytes before they are known, + stageStartBytes (8388608)
  BroadcastHashJoin Inner on [d_date_sk#204L] = [ss_sold_date_sk#414L]: the scan of store_sales: the key is a partition column (dynamic partition pruning's)
  BroadcastHashJoin Inner on [c_current_addr_sk#168L] = [ca_address_sk#182L]: its keys reach no file scan or cached table on the application side
  SortMergeJoin LeftOuter on [a#1] = [b#2]: something new"""
    kinds = bench.why_none(explain)
    assert kinds[:3] == [dict(bench.WHY_KINDS)[k] for k in ("bytes it would wait for", "partition column", "reach")]
    assert kinds[3] == "other: something new"
    assert bench.why_none("no BulkFilter in this plan") == []


def test_files_skipped_and_where_from():
    """The star join's `files skipped` column: each filter's file pruning as explain prints it, by its source."""
    explain = """DynamicFilter [k#8] from [k#0] (shuffle)
  filter:  in-set of 800 keys; pushed to scan: k#8 IN (800 values); statistics of 64 files read from the Delta log (no footer): 63 files skipped
DynamicFilter [k#9] from [k#1] (shuffle)
  filter:  in-set of 20 keys; statistics of 8 files read from Iceberg's manifests (no footer): 6 files skipped
DynamicFilter [k#10] from [k#2] (broadcast)
  filter:  in-set of 40 keys; footers of 8 files read: 6 files, 30 row groups (30000 rows) skipped
DynamicFilter [k#11] from [k#3] (shuffle)
  filter:  in-set of 40 keys; handed to the source's runtime filtering: 38 of 40 input partitions skipped"""
    pruning = bench.file_pruning(explain)
    assert pruning == [(63, 64, "the Delta log"), (6, 8, "Iceberg's manifests"), (6, 8, bench.FOOTERS),
                       (38, 40, bench.RUNTIME_FILTERING)]
    assert bench.files_note(pruning[:2]) == "63/64 (the Delta log), 6/8 (Iceberg's manifests)"
    assert bench.files_note([]) == "-"


def test_the_oracle_writes_the_kept_keys_as_a_user_would():
    """The oracle variant's filter: one range for contiguous keys, an IN list otherwise, none past MAX_KEYS."""
    import oracle

    assert oracle.predicate("f.k", [3, 4, 5, 6]) == "f.k BETWEEN 3 AND 6"
    assert oracle.predicate("f.k", [3, 5, 9]) == "f.k IN (3, 5, 9)"
    assert oracle.predicate("f.k", []) == "FALSE"
    assert oracle.predicate("f.k", list(range(0, 2 * oracle.MAX_KEYS + 2, 2))) is None
    assert oracle.predicate("f.k", list(range(oracle.MAX_KEYS * 3))).startswith("f.k BETWEEN 0 AND ")
    assert oracle.describe([1, 2, 3]) == "one range of 3 keys" and oracle.describe([1, 3]) == "2 keys as an IN list"


def test_driver_time_sums_every_filter_operator():
    """The star join's driver columns: every DynamicFilter operator's driver time in explain's text, and its share."""
    import driver_time

    text = """DynamicFilter [k#8] from [k#0] (shuffle)
  rows:    not counted: no filter tested per row
  driver:  120 ms (keys, decisions, file pruning)
DynamicFilter [j#9] from [j#1] (broadcast)
  rows:    10 in, 2 out
  driver:  30 ms (keys, decisions, file pruning)"""
    assert driver_time.filters_ms(text) == 150
    assert driver_time.filters_ms("no DynamicFilter in this plan") == 0
    assert driver_time.added_share(150, 3.0) == "150 ms = 5.0%"
    assert driver_time.added_share(None, 3.0) == "n/a"


def test_date_sorted_facts_hold_the_same_rows_in_date_order(tmp_path):
    """`--layout date-sorted`: each fact table rewritten sorted by its date (tpcds.sort_by_date), in as many files
    as the generated copy, the same rows (NULL dates too, repeated dates split across
    files)."""
    import duckdb
    import tpcds

    flat = tmp_path / "flat"
    (flat / "sales").mkdir(parents=True)
    con = duckdb.connect()
    for i in range(3):  # three files of random dates
        con.execute(f"COPY (SELECT (random() * 50)::INT + {i} AS d, range AS v FROM range({i * 1000}, {i * 1000 + 1000}) "
                    f"UNION ALL SELECT NULL, -1 - {i}) TO '{flat / 'sales' / f'f{i}.parquet'}' "
                    "(FORMAT parquet, ROW_GROUP_SIZE 100)")
    out = tpcds.sort_by_date(flat, tmp_path / "sorted", {"sales": "d"}, "_marker.json", {"test": 1})
    files = sorted(str(f) for f in (out / "sales").glob("*.parquet"))
    assert len(files) == 3
    rows = lambda fs: con.execute(f"SELECT d, v FROM read_parquet({fs!r}) ORDER BY v").fetchall()  # noqa: E731
    assert rows(files) == rows(sorted(str(f) for f in (flat / "sales").glob("*.parquet"))) and len(rows(files)) == 3003
    # each file, and each row group, holds a range of dates, in order from file to file
    ranges = [con.execute(f"SELECT min(d), max(d) FROM read_parquet('{f}')").fetchone() for f in files]
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]) if None not in a + b), ranges
    assert tpcds.sort_by_date(flat, tmp_path / "sorted", {"sales": "d"}, "_marker.json", {"test": 1}) == out  # cached
