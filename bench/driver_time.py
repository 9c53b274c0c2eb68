"""What a run spends on the driver apart from its tasks: Spark's planning of the query (QueryPlanningTracker's
phases: analysis, optimization, physical planning) and spark-sieve's dynamic filters' own time there (each
operator's `driver time` metric: collecting the keys, deciding, pruning files or planning the scan's tasks again
under the keys, and a table's listing under them). Read after the timing from the runs' DataFrames."""

import re
import statistics

_DRIVER = re.compile(r"^  driver:  (\d+) ms", re.M)


def planning_ms(df):
    """Spark's planning of `df`'s query in milliseconds (AQE's re-planning at run time aside); None on Connect."""
    try:
        phases = df._jdf.queryExecution().tracker().phases().values().iterator()
    except Exception:  # noqa: BLE001 - no JVM DataFrame
        return None
    total = 0
    while phases.hasNext():
        total += phases.next().durationMs()
    return total


def filters_ms(explain_text):
    """The dynamic filters' driver time in spark_sieve.explain's text (every operator's), in milliseconds."""
    return sum(int(ms) for ms in _DRIVER.findall(explain_text))


def median_ms(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def added_share(added_ms, query_s):
    """The driver time spark-sieve adds as a share of its query's time, as a table cell."""
    if added_ms is None or not query_s:
        return "n/a"
    return f"{added_ms:.0f} ms = {added_ms / 1000 / query_s * 100:.1f}%"
