"""Shared by the benchmarks: a session, cached data under .cache/bench, and timing with a time limit."""

import os
import statistics
import threading
import time

from pyspark.sql import SparkSession

import spark_sieve as sieve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, ".cache", "bench")


def add_jar_argument(parser):
    parser.add_argument("--jar", help="load this spark-sieve jar instead of the installed one (A/B against another build)")


def jar_note(jar):
    """The header's mention of the jar an A/B run loaded ('' for the installed one)."""
    return f", jar {jar}" if jar else ""


def session(app, memory="6g", jar=None, settings=None):
    """A local[2] session with spark-sieve loaded (``jar``: another build of it, for an A/B run), and
    `settings` ({key: value}: e.g. a table format's, bench/format_tables.py)."""
    builder = (SparkSession.builder.master("local[2]").appName(app)
               .config("spark.driver.memory", memory)
               # the heap committed whole from the start: each run follows a System.gc() (interleaved_times),
               # after which G1 gives memory back, and the run then paid for growing the heap again (the date
               # join's year: 1.3 s against 1.0 s vanilla, 0.9 s against 0.6 s spark-sieve); and touched whole
               # (AlwaysPreTouch, ~2 s at start): a thread faulting in fresh heap pages cannot reach a safepoint,
               # and every other thread waits at it (-Xlog:safepoint, TPC-H q2 x12 vanilla: 2.3 s of "reaching
               # safepoint", 13 waits over 40 ms; touched: 65 ms, none)
               .config("spark.driver.extraJavaOptions", f"-Xms{memory} -XX:+AlwaysPreTouch")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               # plans are compared as text (plan_reading.same_plan): a scan's filters printed whole, not cut
               # at 100 characters, where ids of other lengths would cut one plan's elsewhere than the other's
               .config("spark.sql.maxMetadataStringLength", "100000"))
    for key, value in (settings or {}).items():
        builder = builder.config(key, value)
    spark = sieve.configure(builder, jar=jar).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_with_limit(spark, action, limit_s):
    """Seconds `action()` took, or None when it ran past `limit_s` (its jobs are then cancelled)."""
    group = f"bench-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, group, interruptOnCancel=True)
    timer = threading.Timer(limit_s, lambda: spark.sparkContext.cancelJobGroup(group))
    timer.start()
    start = time.perf_counter()
    try:
        action()
        elapsed = time.perf_counter() - start
        return elapsed if elapsed < limit_s else None
    except Exception as e:  # a cancelled job, or a plan Spark cannot run (StackOverflowError)
        if time.perf_counter() - start >= limit_s:
            return None
        raise RuntimeError(str(e).splitlines()[0][:300]) from None
    finally:
        timer.cancel()
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def jvm_cpu_seconds(spark):
    """A function giving the CPU seconds (user + system) the session's JVM has used so far — in local
    mode the executors' work too: the work a query did, apart from the time it waited — or None where it
    cannot be read (not local mode, or no /proc)."""
    if not spark.sparkContext.master.startswith("local"):
        return None
    stat = f"/proc/{spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()}/stat"
    if not os.path.exists(stat):
        return None
    ticks = os.sysconf("SC_CLK_TCK")

    def seconds():
        with open(stat) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return seconds


def interleaved_times(spark, actions, runs, limit_s, warmup=1, cpu=None):
    """Each action's seconds (name -> callable; a list of `runs` figures, or None once it was cut at
    `limit_s`, then not run again), after `warmup` rounds whose times are thrown away. The rounds
    interleave the actions, in a rotating order, so that drift (JIT, caches, GC) falls on all of them
    alike. With `cpu` (name -> list), each kept run's JVM CPU seconds are appended there too (see
    jvm_cpu_seconds)."""
    times = {name: [] for name in actions}
    clock = jvm_cpu_seconds(spark) if cpu is not None else None
    names = list(actions)
    for round_ in range(runs + warmup):
        # each round starts with the next action (none always runs after the same one) and each run on a
        # collected heap (a driver's heap fills over a long sitting: G1's cycles fell on whichever ran then)
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            if times[name] is None:
                continue
            spark._jvm.System.gc()
            c0 = clock() if clock else None
            t = run_with_limit(spark, actions[name], limit_s)
            if t is None:
                times[name] = None
            elif round_ >= warmup:
                times[name].append(t)
                if clock:
                    cpu.setdefault(name, []).append(clock() - c0)
    return times


def interleaved_medians(spark, actions, runs, limit_s):
    """Median seconds of each action after one warm-up round (see interleaved_times); None when cut."""
    times = interleaved_times(spark, actions, runs, limit_s)
    return {name: (statistics.median(ts) if ts else None) for name, ts in times.items()}


def fmt(seconds, limit_s):
    return f">{limit_s:.0f}s (cut)" if seconds is None else f"{seconds:.2f}s"


def ratio(base, other):
    if base is None or other is None:
        return "n/a"
    return f"{base / other:.2f}x"
