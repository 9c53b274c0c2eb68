"""``spark_sieve.explain``: what spark-sieve does to a DataFrame's plan."""

from ._facade import Facade


def explain(df, print_it=True):
    """What spark-sieve does to ``df``: each BulkFilter (the tree as written and as it will run, each
    node's cost, the order of the per-column joins) and each DynamicFilter (its keys, the filter it
    chose from the real keys, rows in and out, build time — figures of ``df``'s last run). Prints it
    and returns the text."""
    facade = Facade(df.sparkSession)
    bulk = facade.call("explainBulkFilters", df._jdf) or "no BulkFilter in this plan"
    dynamic = facade.call("explainDynamicFilters", df._jdf) or "no DynamicFilter in this plan"
    text = bulk + "\n\n" + dynamic
    if print_it:
        print(text)
    return text
