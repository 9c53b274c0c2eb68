"""What bench/dynamic_filter.py reads from a plan: the joins and filters of a final plan, its dynamic filters (ran
and planned), whether two plans are one plan ids aside, and spark_sieve.explain's reasons for a join without a
filter, by kind."""

import re

# spark_sieve.explain's reasons for a join without a filter, in a few kinds (the first that matches)
WHY_KINDS = (
    ("partition column", "its key is the scan's partition column (Spark's DPP prunes it)"),
    ("bytes it would wait for", "the scan reads less than the wait for its keys (after DPP where it runs)"),
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


_TABLE_STATS = re.compile(r"statistics of (\d+) files read from (.+?) \(no footer\): (\d+) files skipped")
_FOOTERS = re.compile(r"footers of (\d+) files read: (\d+) files")
# file_pruning's sources that are not a table's own statistics
FOOTERS, RUNTIME_FILTERING = "footers", "runtime filtering, input partitions"
_RUNTIME = re.compile(r"handed to the source's runtime filtering: (\d+) of (\d+) input partitions skipped")


def file_pruning(explain_text):
    """What spark_sieve.explain says the dynamic filters' file pruning did, scan by scan: [(files skipped, files
    whose statistics were read, where from: a table's own metadata, or "footers")], and a V2 source's runtime
    filtering as (input partitions skipped, input partitions, "runtime filtering, input partitions")."""
    found = [(int(m[2]), int(m[0]), m[1]) for m in _TABLE_STATS.findall(explain_text)]
    found += [(int(m[1]), int(m[0]), FOOTERS) for m in _FOOTERS.findall(explain_text)]
    return found + [(int(m[0]), int(m[1]), RUNTIME_FILTERING) for m in _RUNTIME.findall(explain_text)]


def files_note(pruning):
    """file_pruning's list as a table cell: 'M/N (source)', or '-'."""
    return ", ".join(f"{skipped}/{read} ({source})" for skipped, read, source in pruning) or "-"


def filter_count(plan_text):
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


def first_difference(a, b):
    """The first line of `b` that differs from `a`'s, ids aside (None where the plans are one): what a note needs
    to tell "another plan" from noise."""
    if a is None or b is None:
        return None
    x, y = (_PLAN_IDS.sub("", plan).splitlines() for plan in (a, b))
    for i in range(max(len(x), len(y))):
        here = y[i] if i < len(y) else "(its plan ends here)"
        if i >= len(x) or x[i] != here:
            return " ".join(here.split())
    return None


def same_plan(a, b):
    """Whether two executed plans' texts are one plan, ids aside: then a gap between their times is the
    machine's run-to-run noise (or planning time, which the bench cannot tell apart), not a plan's cost."""
    return a is not None and b is not None and _PLAN_IDS.sub("", a) == _PLAN_IDS.sub("", b)
