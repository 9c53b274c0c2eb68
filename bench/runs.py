"""How bench/dynamic_filter.py runs a query: the join modes and variants as settings, an action that applies them
and collects, its answer checked against vanilla's, the interleaved timings and their medians, a table cell."""

import statistics
import time

from answers import diff_answers  # tests/answers.py: dynamic_filter.py puts tests/ on sys.path
from common import fmt, interleaved_times

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
VARIANTS = ("vanilla", "bloom", "sieve", "sieve-eager", "sieve-nodf", "sieve-alt", "oracle")


def _pairs(conf):
    return {k.strip(): v.strip() for k, v in (kv.split("=", 1) for kv in conf.split(",") if kv.strip())}


def variant_settings(args):
    """Each variant's settings: the sieve ones add --sieve-conf, sieve-alt --alt-conf too."""
    sieve_extra = _pairs(args.sieve_conf)
    return {
        "vanilla": {"spark.sieve.enabled": "false"},
        "oracle": {"spark.sieve.enabled": "false"},  # vanilla running the query with the kept keys written in
        "bloom": {"spark.sieve.enabled": "false", **BLOOM},
        "sieve": {"spark.sieve.enabled": "true", **sieve_extra},
        "sieve-eager": {"spark.sieve.enabled": "true", **sieve_extra,
                        "spark.sieve.dynamicFilter.stageStartBytes": "0", "spark.sieve.dynamicFilter.minSizeRatio": "1"},
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


class PlanTexts(dict):
    """Variant -> the text of its final plan. Holds the JVM's plan as a timed action leaves it and makes it text
    when first read, after the timing: py4j takes ~40 ms to pass a text of over 8 KB (measured: a TPC-DS q3 plan
    of 9.3 KB 44 ms, of 7.3 KB 0.2 ms), which made short queries with spark-sieve's longer plans look slower."""

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if not isinstance(value, str):
            value = value.toString()
            super().__setitem__(key, value)
        return value

    def get(self, key, default=None):
        return self[key] if key in self else default


def collect(spark, sql, settings, plans=None, key=None, answers=None, frames=None, history=None):
    """An action: apply `settings`, plan `sql` afresh (a DataFrame run twice would reuse its shuffle
    files), collect it; keeps the final plan in plans[key] (a PlanTexts), the rows in answers[key] and, with
    `frames`, the DataFrame in frames[key] (read after the timing, e.g. by spark_sieve.explain); with `history`,
    every run's DataFrame in the list history[key]. A text of several statements separated by ';' runs them in
    turn (some TPC-DS queries come in two parts)."""
    statements = [s for s in sql.split(";") if s.strip()]

    def run():
        apply(spark, settings)
        for statement in statements:
            df = spark.sql(statement)
            rows = df.collect()
        if plans is not None:
            plans[key] = df._jdf.queryExecution().executedPlan()
        if answers is not None:
            answers[key] = rows
        if frames is not None:
            frames[key] = df
        if history is not None:
            history.setdefault(key, []).append(df)
    return run


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


def rules_ms(df):
    """Milliseconds the run of `df` spent in spark-sieve's rules, by Spark's QueryPlanningTracker (the optimizer's,
    the planner's and each of AQE's plans of it): what deciding costs a query, which a short one's ratio shows.
    None where the tracker cannot be read (a Spark Connect DataFrame)."""
    try:
        rules = df._jdf.queryExecution().tracker().rules().toList().iterator()
    except Exception:  # no JVM DataFrame
        return None
    total = 0
    while rules.hasNext():
        rule = rules.next()
        if rule._1().startswith("sieve."):
            total += rule._2().totalTimeNs()
    return total / 1e6


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
