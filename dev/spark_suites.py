"""Runs Spark's own test suites twice, without spark-sieve and with it (every filter its preconditions allow
placed), and writes what differs: dev/spark-suites fetches and builds what this needs, then calls this.

Per suite, in its own JVM each time (scalatest's Runner, JUnit XML reports): tests run / passed / failed in
each mode, the tests failing only with spark-sieve (with their messages; a bug unless dev/spark-suites-by-design.tsv
lists it with its reason), and, of the queries spark-sieve's run executed that hold an equi-join, the share
whose plan holds a dynamic filter (sieve.testing.PlacementListener, with the reasons given where none was).
"""

import argparse
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

P = "org.apache.spark.sql."


def short(suite):
    return suite.rsplit(".", 1)[-1]


SUITES = [
    P + "DynamicPartitionPruningV1SuiteAEOn", P + "DynamicPartitionPruningV1SuiteAEOff",
    P + "DynamicPartitionPruningV2SuiteAEOn", P + "DynamicPartitionPruningV2SuiteAEOff",
    P + "InjectRuntimeFilterSuite", P + "JoinSuite", P + "DataFrameJoinSuite", P + "SubquerySuite",
    P + "execution.joins.ExistenceJoinSuite", P + "execution.joins.OuterJoinSuite", P + "execution.joins.InnerJoinSuite",
    P + "execution.adaptive.AdaptiveQueryExecSuite",
    P + "execution.datasources.parquet.ParquetV1FilterSuite", P + "execution.datasources.parquet.ParquetV2FilterSuite",
    P + "SQLQuerySuite", P + "DataFrameSuite", P + "DataFrameAggregateSuite", P + "DataFrameWindowFunctionsSuite",
    P + "TPCDSQuerySuite",
]
# what CI runs on every line (--slice, with spark-sieve only): one list, beside the README's table of what CI tests
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "spark_sieve"))
import _spark_lines  # noqa: E402

SLICE = [s for s in SUITES if short(s) in _spark_lines.SUITES_SLICE]

JVM_OPTIONS = [
    "-XX:+IgnoreUnrecognizedVMOptions", "--add-modules=jdk.incubator.vector",
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs",
        "sun.security.action", "sun.util.calendar")),
    "-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true",
    "-Xmx4g", "-Xss4m", "-Dspark.testing=1", "-Dspark.ui.enabled=false",
]
SIEVE_PROPERTIES = {
    "spark.sql.extensions": "sieve.SieveExtensions",
    "spark.sieve.testing.placeEveryFilter": "true",
    # the logging vanilla's run has (Spark's defaults, INFO): spark-sieve's test classes hold the log4j2.properties
    # of its own tests (WARN), which would win, and tests that wait for an INFO line (AQE's plan changes) would fail
    "log4j2.configurationFile": "org/apache/spark/log4j2-defaults.properties",
}


def run_suite(args, suite, mode):
    """Runs `suite` in `mode` ("vanilla" or "sieve"); its JUnit reports, log and placement lines under args.out."""
    base = os.path.join(args.out, mode, short(suite))
    shutil.rmtree(base, ignore_errors=True)  # (a run's reports, log and scratch space start empty)
    os.makedirs(base)
    classpath = [os.path.join(args.spark_jars, "*"), os.path.join(args.test_jars, "*")]
    props = {}
    if mode == "sieve":
        classpath = [args.sieve_jar] + ([args.sieve_tests] if args.sieve_tests else []) + classpath
        props = dict(SIEVE_PROPERTIES)
        if args.sieve_tests:  # (the listener is a test class: without them, no count)
            props.update({"spark.sql.queryExecutionListeners": "sieve.testing.PlacementListener",
                          "sieve.placement.out": os.path.join(base, "placement.tsv")})
    runpath = " ".join(sorted(glob.glob(os.path.join(args.test_jars, "spark-sql_*-tests.jar"))))
    tmp = os.path.join(base, "tmp")
    os.makedirs(tmp, exist_ok=True)
    # (spark.test.home: Spark's Python-UDF test helpers read it as they load, and the suites that hold such a test
    # abort without it; their Python tests then skip themselves, pyspark not being on that path)
    cmd = ["java", *JVM_OPTIONS, f"-Djava.io.tmpdir={tmp}", f"-Dspark.test.home={tmp}",
           *(f"-D{k}={v}" for k, v in props.items()),
           "-cp", os.pathsep.join(classpath), "org.scalatest.tools.Runner",
           "-R", runpath, "-s", suite, "-u", base, "-oW"]
    start = time.monotonic()
    with open(os.path.join(base, "log.txt"), "w") as log:
        try:
            code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp, timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    return base, code, time.monotonic() - start


def vanilla_run(args, suite):
    """The vanilla run of `suite`: kept from an earlier run on the same test-jars (spark-sieve is not in it, so
    nothing of ours changes it) unless --fresh-vanilla; run now otherwise."""
    done = os.path.join(args.out, "vanilla", short(suite), "done.json")
    if not args.fresh_vanilla and os.path.exists(done):
        with open(done) as f:
            kept = json.load(f)
        if kept.get("tests_version") == args.tests_version:
            print(f"[spark-suites] {short(suite)}: vanilla kept from an earlier run ({done})", file=sys.stderr, flush=True)
            return os.path.dirname(done), kept["code"], kept["seconds"]
    print(f"[spark-suites] {short(suite)}: vanilla ...", file=sys.stderr, flush=True)
    base, code, seconds = run_suite(args, suite, "vanilla")
    if code != "timeout":
        with open(done, "w") as f:
            json.dump({"tests_version": args.tests_version, "code": code, "seconds": seconds}, f)
    return base, code, seconds


def results(base):
    """{test name: None (passed) | "skipped" | failure message} from a run's JUnit XML reports."""
    out = {}
    for path in glob.glob(os.path.join(base, "*.xml")):
        for case in ET.parse(path).getroot().iter("testcase"):
            bad = case.find("failure") if case.find("failure") is not None else case.find("error")
            if bad is not None:
                text = (bad.get("message") or bad.text or "").strip()
                out[case.get("name")] = text.splitlines()[0][:300] if text else "failed"
            elif case.find("skipped") is not None:
                out[case.get("name")] = "skipped"
            else:
                out[case.get("name")] = None
    return out


def placement(base):
    """(queries, with an equi-join, those with a dynamic filter, spark-sieve's operators anywhere, reasons)."""
    path = os.path.join(base, "placement.tsv")
    counts = collections.Counter()
    reasons = collections.Counter()
    if os.path.exists(path):
        for line in open(path):
            eq, df, ours, why = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
            counts["queries"] += 1
            counts["ours"] += ours == "1"
            if eq == "1":
                counts["equi"] += 1
                counts["filtered"] += df == "1"
                if df != "1":
                    for r in filter(None, why.split(" | ")):
                        reasons[r.split(":")[0][:120]] += 1
    return counts, reasons


def by_design(path):
    """{(suite's short name, test name): reason} from the tab-separated list."""
    out = {}
    if os.path.exists(path):
        for line in open(path):
            if line.strip() and not line.startswith("#"):
                suite, test, reason = line.rstrip("\n").split("\t")
                out[(suite, test)] = reason
    return out


def failed(outcome):
    return outcome not in (None, "skipped")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    for name in ("line", "tests-version", "out", "spark-jars", "test-jars", "sieve-jar", "by-design"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--sieve-tests", help="spark-sieve's test classes (the placement listener); none: no count")
    p.add_argument("--slice", action="store_true",
                   help="only the suites CI runs, with spark-sieve only (no run without it: they pass there)")
    p.add_argument("--suites", help="comma-separated suite names (short or full) instead of the list")
    p.add_argument("--timeout", type=int, default=3600, help="seconds a suite may run in one mode")
    p.add_argument("--fresh-vanilla", action="store_true",
                   help="run each suite without spark-sieve again, even where an earlier run on these test-jars is kept")
    args = p.parse_args()
    suites = SLICE if args.slice else SUITES
    if args.suites:
        wanted = args.suites.split(",")
        suites = [s for s in SUITES if short(s) in wanted or s in wanted] + \
                 [w for w in wanted if "." in w and w not in SUITES]
    known = by_design(args.by_design)
    rows, bugs, listed, unrun, total = [], [], [], [], collections.Counter()
    all_reasons = collections.Counter()
    for suite in suites:
        vbase, vcode, vs = vanilla_run(args, suite) if not args.slice else (None, 0, 0.0)
        done = "" if args.slice else f"vanilla {vs:.0f} s; "
        print(f"[spark-suites] {short(suite)}: {done}with spark-sieve ...", file=sys.stderr, flush=True)
        sbase, scode, ss = run_suite(args, suite, "sieve")
        vanilla, sieve = results(vbase) if vbase else {}, results(sbase)
        counts, reasons = placement(sbase)
        all_reasons.update(reasons)
        only = sorted(t for t, o in sieve.items() if failed(o) and not failed(vanilla.get(t)))
        for t in only:
            reason = known.get((short(suite), t))
            (listed if reason else bugs).append((short(suite), t, reason or sieve[t]))
        if not sieve and scode != 0:
            # (aborted without spark-sieve too: the test-jar does not link against this line's jars — 4.2.0's
            # AdaptiveQueryExecSuite on 4.3 — which is the line's, not spark-sieve's)
            if vbase and not vanilla and vcode != 0:
                unrun.append((short(suite), f"aborted in both runs: see {vbase}/log.txt"))
            else:
                bugs.append((short(suite), "(the suite did not run)", f"exit {scode}: see {sbase}/log.txt"))
        run = sum(1 for o in sieve.values() if o != "skipped")
        row = {"suite": short(suite), "tests": run, "passed": sum(1 for o in sieve.values() if o is None),
               "failed with spark-sieve": sum(1 for o in sieve.values() if failed(o)),
               "failed vanilla": sum(1 for o in vanilla.values() if failed(o)), "only with spark-sieve": len(only),
               "queries": counts["queries"], "with an equi-join": counts["equi"], "with a filter": counts["filtered"],
               "seconds vanilla / sieve": f"{vs:.0f} / {ss:.0f}"}
        rows.append(row)
        total.update({k: v for k, v in row.items() if isinstance(v, int)})
        print(f"[spark-suites] {short(suite)}: {json.dumps(row)}", file=sys.stderr, flush=True)
    report = render(args, rows, total, bugs, listed, unrun, all_reasons)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(report)
    print(report)
    sys.exit(1 if bugs else 0)


def share(n, of):
    return f"{n / of * 100:.0f}%" if of else "-"


def render(args, rows, total, bugs, listed, unrun, reasons):
    cols = ["suite", "tests", "passed", "failed with spark-sieve", "failed vanilla", "only with spark-sieve",
            "queries", "with an equi-join", "with a filter"]
    lines = [f"# Spark {args.tests_version}'s suites with spark-sieve (Spark line {args.line}, "
             f"spark.sieve.testing.placeEveryFilter)", "",
             *(["The slice CI runs: with spark-sieve only (no run without it), no placements counted.", ""]
               if args.slice else []),
             "| " + " | ".join(cols + ["filter share", "seconds vanilla / sieve"]) + " |",
             "|" + "---|" * (len(cols) + 2)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in cols) +
                     f" | {share(r['with a filter'], r['with an equi-join'])} | {r['seconds vanilla / sieve']} |")
    lines.append("| **all** | " + " | ".join(str(total[c]) for c in cols[1:]) +
                 f" | **{share(total['with a filter'], total['with an equi-join'])}** | |")
    lines += ["", f"## Failing only with spark-sieve, not listed as by design: {len(bugs)}"]
    lines += [f"- {s}: `{t}`: {m}" for s, t, m in bugs] or ["none"]
    lines += ["", f"## Failing only with spark-sieve, by design (dev/spark-suites-by-design.tsv): {len(listed)}"]
    lines += [f"- {s}: `{t}`: {m}" for s, t, m in listed] or ["none"]
    if unrun:
        lines += ["", f"## Did not run, with spark-sieve or without it: {len(unrun)}"]
        lines += [f"- {s}: {m}" for s, m in unrun]
    lines += ["", "## Why an equi-join query got no filter (the reasons' first words, by queries)"]
    lines += [f"- {n} x {r}" for r, n in reasons.most_common(15)] or ["-"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
