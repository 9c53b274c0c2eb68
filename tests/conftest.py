"""Fixtures shared by every test module. Tests import the *installed* spark_sieve (dev/test builds and
installs the wheel first); the source tree under python/ is never on sys.path."""

import gc
import os
import subprocess
import sys
import threading

import pytest
from pyspark.sql import SparkSession

import spark_sieve as sieve
import table_formats
import tiers
from spark_line import CONNECT_SERVER_APART
from standalone import StandaloneCluster
from vanilla_session import vanilla_session_over


def _stop_active_session():
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture(scope="session")
def jar():
    """The jar bundled in the installed wheel; fails (never skips) when it is missing."""
    try:
        return sieve.jar_path()
    except sieve.JarNotFoundError as e:
        pytest.fail(f"the installed spark_sieve has no bundled jar; run the tests through dev/test. {e}")


def _test_settings(builder):
    return (builder
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            # generated code that does not compile fails the test instead of running interpreted
            .config("spark.sql.codegen.fallback", "false")
            .config("spark.driver.host", "127.0.0.1"))


def _classic_builder():
    return _test_settings(SparkSession.builder.master("local[2]").appName("spark-sieve-tests"))


@pytest.fixture(scope="session", autouse=True)
def _jvm_started_by_a_classic_session(jar):
    """This process's JVM, started by a classic spark-sieve session whatever module comes first. PySpark hands
    the settings of the session that launches the JVM to it as system properties, which every later
    SparkContext inherits: a JVM launched by a local Spark Connect session would start a Connect server
    (on its one fixed port) with each later session (e.g. `pytest tests/test_connect.py tests/test_session.py`)."""
    builder = _classic_builder()
    if table_formats.classpath():  # Delta's and Iceberg's jars, for test_table_formats: on the JVM's classpath
        builder = builder.config("spark.driver.extraClassPath", table_formats.classpath())
    sieve.configure(builder).getOrCreate().stop()


@pytest.fixture(scope="module")
def spark(jar):
    """One local[2] session with spark-sieve per test module."""
    _stop_active_session()
    session = sieve.configure(_classic_builder()).getOrCreate()
    yield session
    session.stop()


@pytest.fixture(scope="module")
def vanilla(spark):
    """Vanilla Spark (no spark-sieve) over the JVM of the module's session: `spark`'s own context when it is
    classic, the local Connect server's context when `spark` is a Connect client. Temp views are per session:
    a test registers on it the views its reference query reads (from the same files or rows)."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    assert sc is not None and sc._jsc is not None, "no SparkContext in this process for a vanilla session"
    return vanilla_session_over(sc)


@pytest.fixture(scope="module")
def formats_spark(jar, tmp_path_factory):
    """A local[2] session with spark-sieve that reads this line's table formats (table_formats: Delta's path
    tables, Iceberg's catalog `ice` over a fresh directory): one per test module, as `spark`."""
    _stop_active_session()
    builder = _classic_builder().config("spark.sql.extensions", ",".join(table_formats.extensions()))
    for key, value in table_formats.session_settings(tmp_path_factory.mktemp("warehouse")).items():
        builder = builder.config(key, value)
    session = sieve.configure(builder).getOrCreate()
    yield session
    session.stop()


@pytest.fixture(scope="module")
def formats_vanilla(formats_spark):
    """Vanilla Spark (the table formats' extensions, not spark-sieve's) over `formats_spark`'s context."""
    return vanilla_session_over(formats_spark.sparkContext, table_formats.extensions())


@pytest.fixture(scope="module")
def connect(jar):
    """A Spark Connect client of a local Connect server that PySpark starts with spark_sieve.configure's
    settings (the jar, the extension, the relation plugin): one per test module, as `spark`."""
    _stop_active_session()
    builder = SparkSession.builder.remote("local[2]").appName("spark-sieve-connect-tests")
    if CONNECT_SERVER_APART:  # Spark 3.5's server is a jar of its own: dev/test fetches it and names it here
        server = os.environ.get("SIEVE_CONNECT_SERVER_JAR")
        if not server or not os.path.isfile(server):
            pytest.fail(f"SIEVE_CONNECT_SERVER_JAR ({server!r}) names no Spark Connect server jar; run the tests "
                        "through dev/test, which fetches it")
        builder = sieve._connect.with_server_jar(builder, server)
    yield from _local_connect_session(builder)


@pytest.fixture(scope="module")
def api_mode_connect(jar):
    """Spark 4's `spark.api.mode=connect` on a local master: PySpark starts a local Connect server with the
    builder's settings, as for `.remote("local[2]")`."""
    _stop_active_session()
    yield from _local_connect_session(SparkSession.builder.master("local[2]").config("spark.api.mode", "connect")
                                      .appName("spark-sieve-api-mode-tests"))


# A Spark Connect test still running after this long prints the JVM's threads (_jvm_threads_if_connect_hangs)
CONNECT_HANG_S = 300


@pytest.fixture(autouse=True)
def _jvm_threads_if_connect_hangs(request):
    """The server's half of a Spark Connect hang, which pytest-timeout's Python stacks do not show: a Connect
    test still running after CONNECT_HANG_S prints the local server's JVM threads (3.5's client once waited,
    in a whole-suite run, on a local server that ran nothing)."""
    if not {"connect", "api_mode_connect"} & set(request.fixturenames):
        yield
        return
    timer = threading.Timer(CONNECT_HANG_S, _print_jvm_threads, args=(request.node.nodeid,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _print_jvm_threads(nodeid):
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)  # spark-submit execs the JVM: the same pid
    if proc is None:
        return
    try:
        dump = subprocess.run(["jstack", str(proc.pid)], capture_output=True, text=True, timeout=120)
        threads = dump.stdout + dump.stderr
    except (OSError, subprocess.SubprocessError) as e:
        threads = f"(jstack failed: {e})"
    sys.stderr.write(f"\n{nodeid} still runs after {CONNECT_HANG_S} s; the JVM's threads (jstack {proc.pid}):\n"
                     f"{threads}\n")


def _local_connect_session(builder):
    # An earlier module's Connect session, stopped and left in a reference cycle, is finalized here, in this
    # thread: collected by chance in a thread of PySpark 3.5's pool of release calls, its __del__ closes its
    # client, which joins that pool from inside it while holding the lock every later query takes — a
    # deadlock (SPARK-55362; PySpark 4.3's client no longer waits there), seen as a hang of test_connect_bulk_filter after test_connect.
    gc.collect()
    session = sieve.configure(_test_settings(builder)).getOrCreate()
    assert sieve._connect.is_connect(session), type(session)
    try:
        yield session
    finally:
        sieve._connect.stop_local(session)
        del session
        gc.collect()


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory, jar):
    """A master and two workers on 127.0.0.1, each its own JVM; shut down even when a test fails."""
    _stop_active_session()
    with StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def cluster_spark(standalone_cluster):
    """A spark-sieve session whose executors run on the standalone cluster's workers."""
    builder = (SparkSession.builder.master(standalone_cluster.url).appName("spark-sieve-cluster-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.executor.memory", "512m")
               .config("spark.executor.cores", "1")
               .config("spark.sql.codegen.fallback", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    session = sieve.configure(builder).getOrCreate()
    try:
        standalone_cluster.wait_for_executors(session)
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def cluster_vanilla(cluster_spark):
    """Vanilla Spark (no spark-sieve) on the standalone cluster: the reference side of cluster_spark's answers."""
    return vanilla_session_over(cluster_spark.sparkContext)


_LEFT_OUT: list = []  # what the quick tier left out, for the summary


def pytest_collection_modifyitems(config, items):
    """The quick tier (tests/tiers.py): the full tier's own modules and the AQE-off variants left out, unless modules
    are named on the command line."""
    if not tiers.quick(config):
        return
    modules = [i for i in items if i.path.name in tiers.FULL_ONLY]
    aqe_off = [i for i in items if i.path.name not in tiers.FULL_ONLY and tiers.aqe_off(i)]
    if modules or aqe_off:
        config.hook.pytest_deselected(items=modules + aqe_off)
        items[:] = [i for i in items if i.path.name not in tiers.FULL_ONLY and not tiers.aqe_off(i)]
        _LEFT_OUT.append(f"quick tier: {len(modules)} tests of {', '.join(sorted({i.path.name for i in modules}))} "
                         f"and {len(aqe_off)} AQE-off variants left to the full one (dev/test --full)")


def pytest_terminal_summary(terminalreporter):
    """The exactness suite's tallies (tests/exactness.py): queries, filters placed, declines, differences; what the
    quick tier left out."""
    import exactness

    for line in exactness.TALLIES + _LEFT_OUT:
        terminalreporter.write_line(line)
