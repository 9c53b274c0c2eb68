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


def test_reasons_counted_by_kind():
    explain = """no BulkFilter in this plan

joins without a dynamic filter:
  BroadcastHashJoin Inner on [ss_item_sk#393L] = [i_item_sk#249L]: the scan of store_sales reads 20914057 bytes once dynamic partition pruning has run (150 of 1823 files), < the 67108864 it must for the filter to pay (minApplicationBytes)
  BroadcastHashJoin Inner on [d_date_sk#204L] = [ss_sold_date_sk#414L]: the scan of store_sales: the key is a partition column (dynamic partition pruning's)
  BroadcastHashJoin Inner on [c_current_addr_sk#168L] = [ca_address_sk#182L]: its keys reach no file scan or cached table on the application side
  SortMergeJoin LeftOuter on [a#1] = [b#2]: something new"""
    kinds = bench.why_none(explain)
    assert kinds[:3] == [dict(bench.WHY_KINDS)[k] for k in ("minApplicationBytes", "partition column", "reach")]
    assert kinds[3] == "other: something new"
    assert bench.why_none("no BulkFilter in this plan") == []
