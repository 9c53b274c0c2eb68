"""The oracle: the best any runtime filter can do for a join — vanilla Spark running the query with the keys that
survive the join written into it by hand, as a user who knew them would: one range where they are contiguous, an
IN list otherwise. It reads the same tables and pays the same fixed costs (a Delta log, Iceberg's planning), so
sieve/oracle measures only what spark-sieve adds: its planning, its wait for the keys, what its pruning misses."""

# more kept keys than this are not written by hand: no oracle
MAX_KEYS = 20_000


def kept_keys(spark, sql):
    """The sorted distinct keys `sql` (one integer column) returns, read once with vanilla Spark."""
    return sorted({row[0] for row in spark.sql(sql).collect() if row[0] is not None})


def predicate(column, keys):
    """`column` restricted to `keys` as SQL text: a range when they are contiguous, else an IN list; None when
    there are more than MAX_KEYS."""
    if not keys:
        return "FALSE"
    if keys[-1] - keys[0] + 1 == len(keys):
        return f"{column} BETWEEN {keys[0]} AND {keys[-1]}"
    if len(keys) > MAX_KEYS:
        return None
    return f"{column} IN ({', '.join(str(k) for k in keys)})"


def describe(keys):
    """'800 keys, an IN list' / 'one range of 800 keys' / '400,000 keys: not written by hand' (a table's note)."""
    text = predicate("k", keys)
    if text is None:
        return f"{len(keys):,} keys: more than {MAX_KEYS:,} are not written by hand, no oracle"
    return f"one range of {len(keys):,} keys" if "BETWEEN" in text else f"{len(keys):,} keys as an IN list"


def predicate_of_runs(column, runs):
    """`column` restricted to the keys of `runs` ([lo, hi, lo, hi, ...], sorted) as `predicate` writes them; None past
    MAX_KEYS keys in more than one run."""
    pairs = list(zip(runs[0::2], runs[1::2]))
    if len(pairs) == 1:
        return f"{column} BETWEEN {pairs[0][0]} AND {pairs[0][1]}"
    if sum(hi - lo + 1 for lo, hi in pairs) > MAX_KEYS:
        return None
    return predicate(column, [k for lo, hi in pairs for k in range(lo, hi + 1)])


class SuiteOracle:
    """The oracle of a suite's query (TPC-DS, TPC-H): after spark-sieve ran it, each table view whose column a
    dynamic filter kept rows by is restricted to the keys that filter kept (several filters on one column: their
    union), as a user who knew them would write them into the query; vanilla then runs the query over those views.
    A column with a filter whose keys were not exact (a bloom filter) or too many leaves its view whole. Where the
    query reads a restricted table without a filter too, the oracle's answer differs from vanilla's and it is
    reported as none."""

    def __init__(self, spark):
        self.spark = spark
        self._views = None  # column name -> the temp view holding it
        self._whole = {}  # view -> its DataFrame as registered (taken once: each restore would wrap it again)

    def views(self):
        if self._views is None:
            self._views = {}
            for t in self.spark.catalog.listTables():
                if t.isTemporary:
                    for c in self.spark.table(t.name).columns:
                        self._views.setdefault(c, t.name)
        return self._views

    def restrictions(self, sieve_df):
        """{view: predicate} for the filters of `sieve_df`'s last run, and what was left whole (text)."""
        jvm = self.spark._jvm
        kept = jvm.sieve.api.PythonFacade.keptKeyRanges(sieve_df._jdf, MAX_KEYS)
        runs, whole = {}, set()
        for entry in kept:
            column, ranges = entry[0], entry[1]
            if ranges is None:
                whole.add(column)
            else:
                runs.setdefault(column, []).append(list(ranges))
        out, notes = {}, []
        for column, lists in runs.items():
            view = self.views().get(column)
            text = None if column in whole or view is None else predicate_of_runs(column, _union(lists))
            if text is None:
                notes.append(column)
            else:
                out[view] = f"({out[view]}) AND ({text})" if view in out else text
        return out, notes + sorted(whole - set(runs))

    def action(self, settings, sieve_frames, state, run_with):
        """The oracle's action for a query: reads the restrictions from sieve's DataFrame (`sieve_frames['sieve']`,
        run before it in each round) the first time, then runs `sql` with vanilla's `settings` over the restricted
        views (`run_with(settings)`: runs.collect's action), restoring them after. `state['restricted']` says
        which views it restricted (empty: none, nothing is run); `state["note"]`, set by the caller, stops it."""
        def run():
            if "restricted" not in state:
                if "sieve" not in sieve_frames:
                    raise RuntimeError("the oracle needs sieve's run of the query before it")
                state["restricted"], state["whole"] = self.restrictions(sieve_frames["sieve"])
            if not state["restricted"] or state.get("note"):
                return  # no keys to write in, or the restricted query is not the query: nothing to time
            originals = {v: self._whole.setdefault(v, self.spark.table(v)) for v in state["restricted"]}
            try:
                for v, text in state["restricted"].items():
                    originals[v].where(text).createOrReplaceTempView(v)
                run_with(settings)()
            finally:
                for v, df in originals.items():
                    df.createOrReplaceTempView(v)
        return run


def _union(lists):
    """The union of several sorted run lists [lo, hi, ...] as one sorted run list."""
    pairs = sorted((lo, hi) for runs in lists for lo, hi in zip(runs[0::2], runs[1::2]))
    out = []
    for lo, hi in pairs:
        if out and lo <= out[-1] + 1:
            out[-1] = max(out[-1], hi)
        else:
            out += [lo, hi]
    return out
