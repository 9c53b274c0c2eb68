"""The TPC-DS and TPC-H sections of bench/dynamic_filter.py: a suite's data and queries (tests/tpcds.py,
tests/tpch.py), each query timed under the variants, the totals and what the sieve plans changed."""

import importlib  # tests/tpcds.py, tests/tpch.py: dynamic_filter.py puts tests/ on sys.path
import math
import os
import statistics
import time

from common import DATA, fmt, ratio
from oracle import SuiteOracle
from plan_reading import filter_count, first_difference, same_plan, why_none
from runs import (MODES, PlanTexts, cell, collect, full_settings, median_of, rules_ms, timings,
                  variant_settings, wrong_answers)

import spark_sieve as sieve


def _dfs_cell(counts):
    ran, planned = counts
    return "" if not planned and not ran else str(ran) if ran >= planned else f"{ran} ({planned} planned)"


def _format_facts(spark, tpcds, out_dir, sf, table_format):
    """The TPC-DS fact tables of `out_dir` as `table_format` tables (tpcds.write_facts), written once under
    .cache/bench/ (Delta) or in the Iceberg catalog's namespace bench_tpcds_sf<sf> (.cache/bench/iceberg)."""
    tag = f"tpcds_sf{sf:g}".replace(".", "_")
    where = os.path.join(DATA, f"{tag}_delta") if table_format == "delta" else f"ice.bench_{tag}"
    marker = os.path.join(DATA, f"{tag}.{table_format}.done")
    if os.path.exists(marker):
        return {t: (f"delta.`{os.path.join(where, t)}`" if table_format == "delta" else f"{where}.{t}")
                for t in tpcds.PARTITION_KEYS}
    print(f"writing the fact tables as {table_format} tables ({where}) ...", flush=True)
    names = tpcds.write_facts(spark, out_dir, table_format, where)
    open(marker, "w").close()
    return names


def _suite(name, sf, spark, partitioned=False, table_format=None, date_sorted=False):
    """(title, {number: sql}, skipped) of a query suite (tests/tpcds.py or tests/tpch.py), its data
    generated once under .cache/bench/ and registered as temp views (TPC-DS's facts in `table_format`, or
    partitioned, when asked; the facts sorted by their date key with `date_sorted`); None with the reason if
    it cannot run."""
    try:
        suite = importlib.import_module(name)  # tests/tpcds.py or tests/tpch.py
    except ImportError as e:
        return None, str(e)
    start = time.perf_counter()
    if name == "tpch":
        tpch = suite
        out_dir = tpch.generate(os.path.join(DATA, f"tpch_sf{sf:g}"), sf, parts=max(2, int(sf * 4)))
        sorted_dir = (tpch.generate_date_sorted(out_dir, os.path.join(DATA, f"tpch_sf{sf:g}_date_sorted"), sf)
                      if date_sorted else None)
        tpch.register(spark, out_dir, sorted_dir)
        texts, skipped, title = tpch.queries(strip_limit=False), {}, "TPC-H"
    else:
        tpcds = suite
        out_dir = tpcds.generate(os.path.join(DATA, f"tpcds_sf{sf:g}"), sf)
        part_dir = (tpcds.generate_partitioned(spark, out_dir, os.path.join(DATA, f"tpcds_sf{sf:g}_partitioned"), sf)
                    if partitioned else
                    tpcds.generate_date_sorted(out_dir, os.path.join(DATA, f"tpcds_sf{sf:g}_date_sorted"), sf)
                    if date_sorted else None)
        if table_format:
            tpcds.register_facts(spark, out_dir, _format_facts(spark, tpcds, out_dir, sf, table_format))
        else:
            tpcds.register(spark, out_dir, part_dir)
        texts, skipped = tpcds.queries(strip_limit=False), tpcds.SKIPPED
        title = "TPC-DS" + (" (fact tables partitioned by their date key)" if partitioned else "")
        if table_format:
            title += f" (fact tables as {table_format} tables: tests/tpcds.py write_facts)"
    if date_sorted:
        title += " (fact tables sorted by their date key)"
    print(f"data: {out_dir} (generated or found in {time.perf_counter() - start:.1f}s; it caches)\n", flush=True)
    return (title, texts, skipped), None


# a query more than 10% slower is listed as slower; one below 0.95x vanilla (the bar set for a suite: no query below it)
# gets the --recheck rounds before it is judged, and is listed too
SLOWER = 0.9
RECHECK_BELOW = 0.95
# the seconds of runs (all variants) a short query's recheck fills per --recheck round: a 0.4-2 s query's median
# of 5-9 runs still swings by 10-20% on this kind of machine (TPC-DS sf1 q3: 0.77x in 6 runs, 0.90-1.01x in 15;
# TPC-H sf1 q2, one plan each: 0.77x, 1.02x, 1.09x, 1.29x in four runs of 5-9)
RECHECK_SECONDS = 20.0


# the recheck's control: vanilla's settings run again as one more action of its rounds. A query's medians still
# differ by 10-20% between two series of the same plan (TPC-H sf1, vanilla against itself in one bench run, 7-12
# rounds each: q2 0.84x, q13 0.93x, q9 0.92x), so a query below RECHECK_BELOW is told from noise round by round:
# were sieve's plan as fast as vanilla's, its run would be the slowest of a round's three in a third of them.
CONTROL = "vanilla again"
# the chance below which sieve's run being the slowest of its round's three that often is not put down to noise
NOISE_CHANCE = 0.05


def slowest_chance(vanilla, again, sieve):
    """In how many rounds sieve's run was the slowest of the three (each argument: one time per round), of how
    many, and the chance of at least as many were the three alike (binomial, 1/3 a round)."""
    n = len(sieve)
    k = sum(1 for v, a, s in zip(vanilla, again, sieve) if s > max(v, a))
    chance = sum(math.comb(n, j) * (1 / 3) ** j * (2 / 3) ** (n - j) for j in range(k, n + 1))
    return k, n, chance


def recheck_rounds(recheck, medians, short):
    """The rounds a query below RECHECK_BELOW gets again: `recheck`; a short one's (`short`) three times as many,
    and more until its variants' runs fill RECHECK_SECONDS per round asked (at most ten times as many)."""
    if not short:
        return recheck
    per_round = sum(t for t in medians.values() if t)
    filled = math.ceil(recheck * RECHECK_SECONDS / per_round) if per_round > 0 else 0
    return max(3 * recheck, min(filled, 10 * recheck))


def bench_suite(spark, name, sf, args, variants, only=None, partitioned=False, table_format=None,
                date_sorted=False):
    """Every query of the suite under each variant, interleaved: once (after a warm-up round: the
    first run compiles the generated code, which Spark then caches), and --runs times when a spark-sieve
    plan of it holds a dynamic filter (the queries whose plan it changes; the first run counts as one), or
    --short-runs times when that query is short, and --recheck more rounds when it looks slower than
    RECHECK_BELOW x vanilla (a sitting's few runs swing by more). Lists the queries below RECHECK_BELOW x
    and those more than 10% slower than vanilla."""
    print(f"\n## {name.upper()} at scale factor {sf:g} (join mode: Spark's defaults; queries whose sieve plan "
          f"changes: median of {args.runs} interleaved runs, {args.short_runs} under {args.short_under:g}s, "
          f"the others 1, after a warm-up round; limit "
          f"{args.limit:.0f}s per run)\n")
    suite, error = _suite(name, sf, spark, partitioned, table_format, date_sorted)
    if suite is None:
        print(f"not run: the suite's module cannot be imported ({error})")
        return
    title, texts, skipped = suite
    print(f"### {title}\n")
    variants = [v for v in variants if v != "oracle"] + (["oracle"] if "oracle" in variants else [])
    oracle = SuiteOracle(spark) if "oracle" in variants else None
    timed = [v for v in variants if v != "oracle"]  # the oracle, run for queries with a filter only, totals apart
    all_variants = variant_settings(args)
    all_parts = list(MODES.values()) + list(all_variants.values())
    settings = {v: full_settings(all_variants[v], all_parts=all_parts) for v in variants}
    # sieve-nodf/sieve: what the filters themselves gain; sieve/sieve-alt: what --alt-conf gains
    rat = [(a, b) for a, b in (("vanilla", "sieve"), ("bloom", "sieve"), ("vanilla", "sieve-eager"),
                               ("sieve-nodf", "sieve"), ("sieve", "sieve-alt"), ("sieve", "oracle"))
           if a in variants and b in variants]
    sieves = [v for v in variants if v.startswith("sieve")]

    # the JVM's CPU time (driver and local executors) beside wall time: work done, apart from time spent waiting
    cpu_pair = ("vanilla", "sieve") if "vanilla" in variants and "sieve" in variants else None
    print("| query | runs | " + " | ".join(variants) + "".join(f" | {a}/{b}" for a, b in rat)
          + (" | CPU vanilla/sieve" if cpu_pair else "") + "".join(f" | DFs ({v})" for v in sieves) + " |")
    print("|---|---|" + "---|" * (len(variants) + len(rat) + bool(cpu_pair) + len(sieves)), flush=True)
    cpu_totals = {v: 0.0 for v in variants}
    totals, measured, cut, failed, skipped_names, with_df = {v: 0.0 for v in variants}, 0, 0, [], [], {}
    planned_only = {}  # a filter in the initial plan only (see plan_reading.filter_count)
    changed_totals, changed_measured = {v: 0.0 for v in variants}, 0
    oracle_pairs = []  # (query, sieve's time, the oracle's) where the oracle ran
    # vanilla/sieve < 0.9, by what the sieve plan changed: "filter", "plan" (another plan without one), "none"
    slower = {"filter": [], "plan": [], "none": []}
    below = []  # vanilla/sieve < RECHECK_BELOW
    same_as_vanilla = []  # the queries whose sieve plan is vanilla's, ids aside
    other_plan = []  # the queries whose sieve plan is not vanilla's and holds neither a filter nor a wait
    why = {}  # kind of reason -> joins of the sieve plans that got no filter (why_none)
    rechecked = []  # the queries --recheck ran again, their ratio before and after
    beyond = []  # rechecked, still below RECHECK_BELOW, and not by chance (slowest_chance)
    run_count = 0  # the queries run (a subset with --tpcds-queries / --tpch-queries)
    planning = {}  # query -> ms in spark-sieve's rules in its last sieve run (runs.rules_ms)
    for number, sql in sorted(texts.items()):
        name_q = f"q{number}" if isinstance(number, int) else str(number)
        if only and str(number) not in only.split(","):
            continue
        if number in skipped or name_q in skipped:
            skipped_names.append(name_q)
            continue
        run_count += 1
        plans, answers, frames, oracle_state = PlanTexts(), {}, {}, {}
        actions = {v: collect(spark, sql, settings[v], plans, v, answers, frames if v == "sieve" else None)
                    for v in timed}
        if oracle:
            actions["oracle"] = oracle.action(settings["oracle"], frames, oracle_state,
                                              lambda conf: collect(spark, sql, conf, plans, "oracle", answers))
        cpus = {}
        all_times, errors = timings(spark, actions, 1, args.limit, cpu=cpus)
        for v in wrong_answers(answers):
            errors[v], all_times[v] = "WRONG ANSWER: its rows differ from vanilla Spark's", None
        oracle_note = _oracle_note(oracle_state, errors, all_times) if oracle else None
        dfs = {v: filter_count(plans.get(v, "")) for v in sieves}
        # a scan held back for DPP's keys (AwaitBroadcasts in the initial plan) changes how it runs too
        def changes(v):
            return any(dfs[v]) or "AwaitBroadcasts" in plans.get(v, "")
        changed = any(changes(v) for v in sieves)  # any sieve variant's plan: more runs for all
        def more_runs(n, extra=None):  # `extra`: actions run in these rounds only, their times returned as they are
            more, errs = timings(spark, {**actions, **(extra or {})}, n, args.limit, warmup=0, cpu=cpus)
            merged = {v: None if all_times[v] is None or more[v] is None else all_times[v] + more[v]
                      for v in variants}
            merged.update({v: more[v] for v in extra or {}})
            for v in wrong_answers(answers):
                errs[v], merged[v] = "WRONG ANSWER: its rows differ from vanilla Spark's", None
            if oracle:
                _oracle_note(oracle_state, errs, merged)
            return merged, errs

        def short(t):  # by the medians `t`: short queries vary most between runs and cost least
            return all(x is not None and x < args.short_under for v, x in t.items() if v != "oracle")

        def sieve_slower(t, below=SLOWER):  # a query cut at the limit (None) is not compared
            return "vanilla" in variants and "sieve" in variants and t["vanilla"] and t["sieve"] \
                and t["vanilla"] / t["sieve"] < below

        runs = 1
        if changed and args.runs > 1 and not errors:
            # the first run counts as one of them
            runs = max(args.runs, args.short_runs) if short(median_of(all_times)) else args.runs
            all_times, errors = more_runs(runs - 1)
        times = median_of(all_times)
        first_look, noise, not_chance = "", "", False
        if args.recheck and not errors and sieve_slower(times, RECHECK_BELOW):
            # a query that looks slower gets more rounds before it is called slower: a sitting's 3 runs
            # of a 40 s query swing by more than that (the first figure is kept in the list)
            # (a short query three times as many — TPC-DS q12 partitioned, one plan for both, 0.85x in 3 runs,
            # its 9 runs of vanilla 0.87-1.98 s)
            rounds = recheck_rounds(args.recheck, times, short(times))
            first_look = f"{ratio(times['vanilla'], times['sieve'])} in {runs} run(s), then "
            control = {CONTROL: collect(spark, sql, settings["vanilla"])}
            all_times, errors = more_runs(rounds, control)
            runs += rounds
            again = all_times.pop(CONTROL)
            times = median_of(all_times)
            if not errors and all(times[v] for v in timed) and again:
                vanilla_in_rounds = all_times["vanilla"][-rounds:]
                k, n, chance = slowest_chance(vanilla_in_rounds, again, all_times["sieve"][-rounds:])
                noise = (f" (vanilla against itself in those rounds: "
                         f"{ratio(statistics.median(vanilla_in_rounds), statistics.median(again))}; "
                         f"sieve's run the slowest of the three in {k} of {n}, {chance:.0%} by chance)")
                not_chance = sieve_slower(times, RECHECK_BELOW) and chance < NOISE_CHANCE
        cpu_med = {v: statistics.median(cpus[v]) if cpus.get(v) and all_times.get(v) else None for v in variants}
        if "sieve" in frames:
            planning[name_q] = rules_ms(frames["sieve"])
        rules_note = f" (its rules {planning[name_q]:.0f} ms)" if planning.get(name_q) is not None else ""
        if not_chance:
            beyond.append(f"{name_q} {ratio(times['vanilla'], times['sieve'])}{rules_note}")
        if first_look and not errors:
            rechecked.append(f"{name_q} {first_look}{ratio(times['vanilla'], times['sieve'])} in {runs}{noise}")
        for kind in why_none(sieve.explain(frames["sieve"], print_it=False) if "sieve" in frames else ""):
            why[kind] = why.get(kind, 0) + 1
        same = "vanilla" in plans and same_plan(plans.get("vanilla"), plans.get("sieve"))
        if same:
            same_as_vanilla.append(name_q)
        elif "vanilla" in plans and "sieve" in plans and not changes("sieve"):
            other_plan.append(f"{name_q} (first line unlike vanilla's: "
                              f"{first_difference(plans.get('vanilla'), plans.get('sieve'))})")
        if sieve_slower(times, RECHECK_BELOW):
            below.append(f"{name_q} {ratio(times['vanilla'], times['sieve'])}{rules_note}")
        if sieve_slower(times):  # by the sieve variant's own plan (not another variant's filters)
            what = "filter" if dfs["sieve"][0] else "none" if same else "plan"
            slower[what].append(f"{name_q} {ratio(times['vanilla'], times['sieve'])}")
        for v in sieves:
            if dfs[v][0]:
                with_df.setdefault(v, []).append(name_q)
            elif dfs[v][1]:
                planned_only.setdefault(v, []).append(name_q)
        failed += [f"{name_q} under {v}: {e}" for v, e in errors.items()]
        if oracle and times.get("oracle") and times.get("sieve") and not errors:
            oracle_pairs.append((name_q, times["sieve"], times["oracle"]))
        if not errors and all(times[v] is not None for v in timed):
            measured += 1
            for v in timed:
                totals[v] += times[v]
                cpu_totals[v] += cpu_med[v] or 0.0
                if changed:
                    changed_totals[v] += times[v]
            changed_measured += 1 if changed else 0
        else:
            cut += 0 if errors else 1
        print(f"| {name_q} | {runs} | " + " | ".join(oracle_note if v == "oracle" and oracle_note
                                                     else cell(times, errors, v, args.limit) for v in variants)
              + "".join(f" | {ratio(times[a], times[b])}" for a, b in rat)
              + (f" | {ratio(cpu_med[cpu_pair[0]], cpu_med[cpu_pair[1]])}" if cpu_pair else "")
              + "".join(f" | {_dfs_cell(dfs[v])}" for v in sieves) + " |", flush=True)
        if errors and args.fail_fast:
            print(f"\n--fail-fast: stopped after {name_q}")
            break
    for label, t, count in (("total", totals, measured), ("queries whose plan sieve changes (a filter or a wait for DPP)", changed_totals, changed_measured)):
        print(f"| **{label}** ({count} measured) | | "
              + " | ".join(fmt(t[v], args.limit) if measured and v != "oracle" else "-" for v in variants)
              + "".join(f" | {ratio(t[a] or None, t[b] or None)}" for a, b in rat)
              + (f" | {ratio(cpu_totals[cpu_pair[0]] or None, cpu_totals[cpu_pair[1]] or None)}"
                 if cpu_pair and label == "total" else (" |" if cpu_pair else ""))
              + " |" * len(sieves) + " |")
    if oracle:
        print("\n" + _oracle_summary(oracle_pairs))
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
        print(f"\n{args.recheck} more rounds for the queries that looked below {RECHECK_BELOW}x vanilla (vanilla/sieve): "
              f"{'; '.join(rechecked)}")
    if "vanilla" in variants and "sieve" in variants:
        print(f"\nqueries whose sieve plan is vanilla's, ids aside: {len(same_as_vanilla)} of {run_count}; "
              f"another plan with neither a filter nor a wait: {', '.join(other_plan) or 'none'}")
        print(f"\nmore than 10% slower than vanilla: with a filter: {', '.join(slower['filter']) or 'none'}; "
              f"another plan without a filter (a wait for DPP's keys, a filter planned then dropped): "
              f"{', '.join(slower['plan']) or 'none'}; vanilla's own plan (ids aside: run-to-run noise or "
              f"planning time): {', '.join(slower['none']) or 'none'}")
        print(f"\nbelow {RECHECK_BELOW}x vanilla: {', '.join(below) or 'none'}")
        if args.recheck:
            print(f"\nof those, sieve's run the slowest of its recheck round's three (vanilla, sieve, vanilla again) "
                  f"too often to be chance (< {NOISE_CHANCE:.0%}): {', '.join(beyond) or 'none'}")
    known = {q: ms for q, ms in planning.items() if ms is not None}
    if known:
        most = sorted(known.items(), key=lambda kv: -kv[1])[:5]
        print(f"\nplanning time in spark-sieve's rules (each query's last sieve run; the optimizer's, the planner's "
              f"and AQE's plans): {sum(known.values()) / 1000:.1f} s in all {len(known)} queries"
              + (f", {sum(known.values()) / 1000 / totals['sieve']:.1%} of sieve's total" if totals.get("sieve") else "")
              + "; the most: " + ", ".join(f"{q} {ms:.0f} ms" for q, ms in most))
    if skipped_names:
        print(f"\nskipped: {', '.join(skipped_names)}")
    return len(failed)


def _oracle_note(state, errors, times):
    """The oracle's cell where it has no time (its error and time taken out of `errors` and `times`: no oracle is not
    a failure of the query), else None."""
    error = errors.pop("oracle", None)
    note = state.get("note")
    if note:
        pass
    elif error and error.startswith("WRONG ANSWER"):
        note = "none (the query reads a restricted table without a filter too)"
    elif error:
        note = f"none ({error})"
    elif not state.get("restricted"):
        note = "-" if not state.get("whole") else f"none ({', '.join(state['whole'])}: keys not exact or too many)"
    if note:
        times["oracle"], state["note"] = None, note
    return note


def _oracle_summary(pairs):
    """sieve/oracle over the queries the oracle ran: the total, the median and the farthest."""
    if not pairs:
        return "sieve/oracle: no query with a filter whose keys the oracle could write in"
    ratios = sorted(((s / o, q) for q, s, o in pairs), reverse=True)
    total_s, total_o = sum(s for _, s, _ in pairs), sum(o for _, _, o in pairs)
    within = sum(1 for r, _ in ratios if r <= 1.15)
    return (f"sieve/oracle over the {len(pairs)} queries with a filter the oracle writes in: total "
            f"{total_s:.2f}s / {total_o:.2f}s = {ratio(total_s, total_o)}, median {statistics.median(r for r, _ in ratios):.2f}x, "
            f"{within} within 1.15x; the farthest: " + ", ".join(f"{q} {r:.2f}x" for r, q in ratios[:5]))
