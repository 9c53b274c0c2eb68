"""The exactness suite of dynamic filters on table formats: every table of tests/exactness_tables.py, each of its
reads (current, older snapshots and versions, tags, branches, incremental windows), joined to key sets chosen
against that read's own files — no key of the table, no key at all, keys inside one file, every file's first and
last key and their neighbours, a sparse sample, every key, NULLs, keys beyond the column type's range — by inner,
semi and outer joins (the fact the non-preserved side, and the preserved one), broadcast and sort-merge, with
AQE on and off. Each answer is compared with a session without spark-sieve; each query has its dynamic filter
placed or its join's decline named by `spark_sieve.explain`, and where a filter is placed the explain says what
it pruned or why it pruned nothing.

`cases(whole=False)` is the slice CI runs: each (table, read, key set) once, the join and strategy rotating over
them, so every combination appears across the slice; `whole=True` runs every join and strategy of each
(`dev/exactness`); `thin=3` a third of the slice (the quick test tier's)."""

import re
from collections import Counter
from dataclasses import dataclass

from forced import FORCED
from plans import declined_joins, dynamic_filters, joins
from vanilla_session import settings_on

INT_MAX = 2**31 - 1

STRATEGIES = {"broadcast": {"spark.sql.autoBroadcastJoinThreshold": "10485760"},
              "sort-merge": {"spark.sql.autoBroadcastJoinThreshold": "-1",
                             "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}}
COMBOS = [(join, strategy, aqe) for join in ("inner", "semi", "outer", "preserved")
          for strategy in STRATEGIES for aqe in ("true", "false")]

# every filter the preconditions allow on these small tables (tests/forced.py): each row tested, keys pushed into
# every scan that takes them
SIEVE_SETTINGS = dict(FORCED)

FACT_AGG = "count(*) AS n, count(f.v) AS nv, sum(f.v) AS sv, sum(hash(f.k, f.v)) AS h"
JOINS = {
    "inner": "SELECT {agg}, count(d.ks) AS nd FROM {fact} f JOIN {dim} d ON f.k = d.{key} WHERE d.ks = '{ks}'",
    "semi": "SELECT {agg} FROM {fact} f WHERE f.k IN (SELECT d.{key} FROM {dim} d WHERE d.ks = '{ks}')",
    "outer": "SELECT {agg}, count(d.ks) AS nd FROM {dim} d LEFT JOIN {fact} f ON f.k = d.{key} WHERE d.ks = '{ks}'",
    "preserved": ("SELECT {agg}, count(d.ks) AS nd FROM {fact} f "
                  "LEFT JOIN (SELECT * FROM {dim} WHERE ks = '{ks}') d ON f.k = d.{key}"),
}


@dataclass(frozen=True)
class Case:
    fmt: str
    table: str
    read: str
    key_set: str
    join: str
    strategy: str
    aqe: str

    @property
    def name(self):
        return (f"{self.fmt} {self.table}@{self.read} keys={self.key_set} {self.join} {self.strategy} "
                f"aqe={self.aqe}")


def key_sets(keys, bounds, wide_type):
    """{name: (dim column, values)} of a read whose distinct non-NULL keys are `keys` (sorted) and whose files hold
    keys within `bounds` ([(min, max)] a file); `wide_type`: whether k is already a BIGINT."""
    lo, hi = keys[0], keys[-1]
    middle = sorted(bounds)[len(bounds) // 2]
    inside = [k for k in keys if middle[0] <= k <= middle[1]]
    edges = sorted({v for a, b in bounds for v in (a - 1, a, b, b + 1)})
    beyond = [INT_MAX + 1, INT_MAX + 2, -INT_MAX - 2, 2**32 + 5, 2**32 + keys[len(keys) // 2]]
    return {
        "none": ("k", [hi + 1000 + i for i in range(5)] + [lo - 1000 - i for i in range(5)]),
        "empty": ("k", []),
        "one_file": ("k", inside[::3][:50]),
        "edges": ("k", edges),
        "sparse": ("k", keys[::97]),
        "all": ("k", keys),
        "nulls": ("k", [None] + keys[:5] + keys[-5:]),
        # joined on a BIGINT column: an INT k is cast to meet it; values beyond INT's range
        "wide": ("wide", beyond + keys[:: max(1, len(keys) // 10)] + ([] if wide_type else [lo, hi])),
    }


class Suite:
    """The reads of `tables` ({format: {table: [(label, relation)]}}) in `spark` (spark-sieve's session) and
    `vanilla`, with a dimension per read of its key sets written under `root`."""

    def __init__(self, spark, vanilla, tables, root):
        self.spark, self.vanilla = spark, vanilla
        self.reads, self.dims, self.sets, self.expected = {}, {}, {}, {}
        for fmt, by_table in tables.items():
            for table, reads in by_table.items():
                for label, relation in reads:
                    at = (fmt, table, label)
                    self.reads[at] = self._relation(at, relation)
                    self._dimension(at, f"{root}/dim_{fmt}_{table}_{label}")

    def _relation(self, at, relation):
        """The name a query reads `relation` by: a table's, or a temporary view (in both sessions) of a reader's."""
        if isinstance(relation, str):
            return relation
        view = "exact_" + "_".join(at)
        for session in (self.spark, self.vanilla):
            session.read.format(relation["format"]).options(**relation["options"]).load(relation["path"]) \
                .createOrReplaceTempView(view)
        return view

    def _dimension(self, at, path):
        rel = self.reads[at]
        k_type = self.vanilla.sql(f"SELECT k FROM {rel}").schema["k"].dataType.simpleString()
        bounds = [(r[0], r[1]) for r in self.vanilla.sql(
            f"SELECT min(k), max(k) FROM {rel} WHERE k IS NOT NULL GROUP BY input_file_name()").collect()]
        keys = [r[0] for r in
                self.vanilla.sql(f"SELECT DISTINCT k FROM {rel} WHERE k IS NOT NULL ORDER BY k").collect()]
        assert keys and bounds, f"{at}: no key read"
        sets = key_sets(keys, bounds, k_type == "bigint")
        rows = [(None if column == "wide" else v, v if column == "wide" or v is None or abs(v) <= INT_MAX else None, name)
                for name, (column, values) in sets.items() for v in values]
        self.spark.createDataFrame(rows, f"k {k_type}, wide bigint, ks string").coalesce(1).write.parquet(path)
        view = "exact_dim_" + "_".join(at)
        for session in (self.spark, self.vanilla):
            session.read.parquet(path).createOrReplaceTempView(view)
        self.dims[at] = view
        self.sets[at] = {name: column for name, (column, _) in sets.items()}

    def cases(self, whole=False, thin=1):
        """Every case (`whole`), or the slice: each (table, read, key set) with the join and strategy rotating; with
        `thin` > 1 every thin-th case of the slice (each read keeps key sets of its own, and the rotation still
        reaches every join, strategy and AQE setting while `thin` and len(COMBOS) share no factor)."""
        out = []
        for i, (at, key_set) in enumerate((at, ks) for at in self.reads for ks in self.sets[at]):
            if i % thin:
                continue
            combos = COMBOS if whole else [COMBOS[i % len(COMBOS)]]
            out += [Case(*at, key_set, *combo) for combo in combos]
        return out

    def query(self, case):
        at = (case.fmt, case.table, case.read)
        return JOINS[case.join].format(agg=FACT_AGG, fact=self.reads[at], dim=self.dims[at],
                                       key=self.sets[at][case.key_set], ks=case.key_set)

    def run(self, case):
        """The case's outcome: {"difference": None or text, "placed": bool, "declined": reasons, "pruning": text}."""
        query = self.query(case)
        if query not in self.expected:  # (the answer of a query is the same under every strategy)
            self.expected[query] = Counter(map(tuple, self.vanilla.sql(query).collect()))
        settings = {**STRATEGIES[case.strategy], "spark.sql.adaptive.enabled": case.aqe}
        with settings_on(self.spark, {**settings, **SIEVE_SETTINGS}):
            df = self.spark.sql(query)
            try:
                actual = Counter(map(tuple, df.collect()))
            except Exception as e:  # noqa: BLE001 (a new error is a difference, reported with the query)
                return {"difference": f"{query}\n  raised {str(e).splitlines()[0][:300]}", "placed": False,
                        "declined": [], "pruning": "", "no_join": False}
            from spark_sieve import explain
            text = explain(df, print_it=False)
            outcome = {"difference": None, "placed": bool(dynamic_filters(df)),
                       "declined": [why for _, why in declined_joins(df)], "pruning": pruning(text),
                       "no_join": not joins(df)}
        if actual != self.expected[query]:
            outcome["difference"] = f"{query}\n  vanilla {dict(self.expected[query])}\n  sieve   {dict(actual)}"
        return outcome


def pruning(explain_text):
    """What the filters' explain says of the files: "skipped N" (files, or a source's input partitions, or row groups
    by footers), "declined: why", or "" (nothing pruned or said)."""
    declined = re.findall(r"no file pruned: ([^;\n]+)", explain_text)
    if declined:
        return "declined: " + declined[0]
    skipped = sum(int(n) for pattern in (r"(\d+) files skipped", r"(\d+) of \d+ input partitions skipped",
                                         r"footers of \d+ files read: (\d+) files", r"(\d+) row groups \(")
                  for n in re.findall(pattern, explain_text))
    return f"skipped {skipped}" if skipped else ""


# the tallies of the runs in this process, printed at the end of pytest's report (conftest)
TALLIES = []


def tally(fmt, outcomes, seconds, not_built):
    """One line: queries, with a filter placed (pruning files / declining to), declined joins, differences; then
    the most frequent declines and the tables the format's release could not build (`not_built`: {name: why})."""
    placed = [o for o in outcomes if o["placed"]]
    pruned = sum(1 for o in placed if o["pruning"].startswith("skipped"))
    declined_pruning = sum(1 for o in placed if o["pruning"].startswith("declined"))
    no_join = sum(1 for o in outcomes if o["no_join"])
    unnamed = sum(1 for o in outcomes if not o["placed"] and not o["declined"] and not o["no_join"])
    reasons = Counter(re.sub(r"\d+", "N", re.sub(r"\[.*?\]|`[^`]*`|\S+#\d+L?", "_", r))[:90]
                      for o in outcomes if not o["placed"] for r in o["declined"])
    line = (f"exactness {fmt}: {len(outcomes)} queries in {seconds:.0f} s, a filter placed in {len(placed)} "
            f"({pruned} pruned files, {declined_pruning} declined pruning with a reason), "
            f"{len(outcomes) - len(placed) - unnamed - no_join} declined with a reason, "
            f"{no_join} with no join left (AQE's empty relation), {unnamed} neither, "
            f"{sum(1 for o in outcomes if o['difference'])} differences")
    why_unpruned = Counter(o["pruning"] for o in placed if o["pruning"].startswith("declined"))
    TALLIES.append(line + "".join(f"\n    decline x{n}: {r}" for r, n in reasons.most_common(6))
                   + "".join(f"\n    pruning {r} x{n}" for r, n in why_unpruned.most_common(6))
                   + "".join(f"\n    not built: {name}: {why}" for name, why in not_built.items()))
    return line

