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
