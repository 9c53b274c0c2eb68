"""``spark_sieve.explain``: what spark-sieve does to a DataFrame's plan."""

from __future__ import annotations

from typing import Any

from . import _connect
from ._facade import Facade


def explain(df: Any, print_it: bool = True) -> str:
    """What spark-sieve does to ``df``: each BulkFilter (the tree as written and as it will run, each
    node's cost, the order of the per-column joins) and each DynamicFilter (its keys, the filter it
    chose from the real keys, rows in and out, build time — figures of ``df``'s last run; on Spark Connect,
    of the plan as it would start). Prints it and returns the text."""
    if _connect.is_connect_dataframe(df):  # the plan as it would start: the server plans each request anew
        bulk, dynamic = _connect.explain_text(df)
    else:
        facade = Facade(df.sparkSession)
        bulk, dynamic = facade.call("explainBulkFilters", df._jdf), facade.call("explainDynamicFilters", df._jdf)
    text = (bulk or "no BulkFilter in this plan") + "\n\n" + (dynamic or "no DynamicFilter in this plan")
    if print_it:
        print(text)
    return text
