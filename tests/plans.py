"""Reading plans from Python for plan-shape assertions: a DataFrame's analysed and optimised logical plans (of
a classic or a Spark Connect DataFrame), and (through py4j) the operators of the final physical plan, AQE's
stages and subqueries included, with their SQL metrics."""

import re

from spark_sieve._connect import is_connect_dataframe


def logical_plans(df):
    """(analysed, optimised) logical plan of `df` as text: from the JVM's QueryExecution on a classic session,
    from the server's extended explain on Spark Connect (the same tree strings)."""
    if is_connect_dataframe(df):
        text = df._explain_string(extended=True)
        sections = dict(re.findall(r"== (\w+) Logical Plan ==\n(.*?)(?=\n== |\Z)", text, re.S))
        return sections["Analyzed"], sections["Optimized"]
    qe = df._jdf.queryExecution()
    return qe.analyzed().toString(), qe.optimizedPlan().toString()


def _seq(scala_seq):
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _final(plan):
    """AQE's final plan in place of its AdaptiveSparkPlanExec; stages in place of their wrappers."""
    name = plan.getClass().getSimpleName()
    if name == "AdaptiveSparkPlanExec":
        return _final(plan.executedPlan())
    if name.endswith("QueryStageExec"):
        return _final(plan.plan())
    if name == "ReusedExchangeExec":
        return _final(plan.child())
    return plan


def operators(df):
    """Every operator of `df`'s executed plan (run `df` first for AQE's final plan), with subqueries."""
    out, todo, seen = [], [df._jdf.queryExecution().executedPlan()], set()
    while todo:
        plan = _final(todo.pop())
        key = plan.hashCode() ^ hash(plan.getClass().getName())
        if key in seen and plan.getClass().getSimpleName() != "DynamicFilterExec":
            continue
        seen.add(key)
        out.append(plan)
        todo.extend(_seq(plan.children()))
        todo.extend(_seq(plan.subqueries()))
    return out


def named(df, simple_name):
    return [p for p in operators(df) if p.getClass().getSimpleName() == simple_name]


def metric(plan, name):
    option = plan.metrics().get(name)
    return option.get().value() if option.isDefined() else None


def partitions_read(df):
    """Partitions read by each file scan of `df` (after it ran), summed."""
    return sum(metric(s, "numPartitions") or 0 for s in named(df, "FileSourceScanExec"))


def dynamic_filters(df):
    return named(df, "DynamicFilterExec")


def bulk_filter_lowered(df):
    """Whether spark-sieve's bulk-filter rules fired on `df`: one BulkFilter node in the analysed plan, none left
    after optimisation (lowered to a SetFilter or to joins)."""
    analyzed, optimized = logical_plans(df)
    return (analyzed.count("BulkFilter") == 1 and "BulkFilter" not in optimized
            and ("SetFilter" in optimized or "Join" in optimized))


def optimized_shape(df):
    """`df`'s optimised logical plan as text without expression ids (`k#12L` -> `k`): two sessions' plans of one
    query compare equal when they are the same plan."""
    return re.sub(r"#\d+L?", "", logical_plans(df)[1])


def joins_innermost_first(df):
    """The join types of `df`'s optimised plan (a left-deep chain of subquery joins), the one applied first
    (innermost) first: `['LeftSemi', 'ExistenceJoin(exists)', ...]`."""
    return re.findall(r"Join (\w+(?:\([^)]*\))?)", optimized_shape(df))[::-1]


def declined_joins(df):
    """`(join, reason)` for each join that `spark_sieve.explain` lists without a dynamic filter: the decline and
    its reason (a join is "BroadcastHashJoin Inner on [k#1] = [k#2]")."""
    from spark_sieve import explain

    text = explain(df, print_it=False)
    section = text.split("joins without a dynamic filter:", 1)
    if len(section) < 2:
        return []
    return re.findall(r"^  (\w+ \w+ on \[.*?\] = \[.*?\]): (.+)$", section[1], re.M)


def joins(df):
    """The join operators of `df`'s executed plan (none where AQE replaced a join by an empty relation)."""
    return [p for p in operators(df) if p.getClass().getSimpleName().endswith("JoinExec")]
