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
