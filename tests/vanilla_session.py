"""Vanilla Spark beside spark-sieve in one JVM: the reference side of every answer test (conftest's `vanilla`
fixture), and how a test tells a session with spark-sieve's rules from one without."""

from contextlib import contextmanager

from pyspark.sql import SparkSession

from spark_line import LINE


def vanilla_session_over(sc, extensions=()):
    """A classic session over the SparkContext `sc` with no extension but `extensions` (class names: a table
    format's, which its tables cannot be read without), none by default: the reference side of every answer
    test. `SparkSession.newSession()` and `new SparkSession(sc)` both apply the extensions the context's
    `spark.sql.extensions` names (spark-sieve's, set by spark_sieve.configure), so neither is vanilla; the
    primary constructor (private[sql] in Scala, public in bytecode) takes the extensions to use: here an empty
    `SparkSessionExtensions`. Its own SharedState too (as the Scala suites' VanillaSession), so that it reads
    no plan cached by a spark-sieve session. Never stop it: that would stop `sc`."""
    jvm = sc._jvm
    none = getattr(getattr(jvm.scala, "None$"), "MODULE$")
    no_options = getattr(getattr(jvm.scala.collection.immutable, "Map$"), "MODULE$").empty()
    injected = extensions
    extensions = jvm.org.apache.spark.sql.SparkSessionExtensions()
    for name in injected:
        extension = jvm
        for part in name.split("."):
            extension = getattr(extension, part)
        extension().apply(extensions)
    if LINE >= (4, 0):  # (context, sharedState, parentSessionState, extensions, options, parentManagedJobTags)
        jsession = jvm.org.apache.spark.sql.classic.SparkSession(sc._jsc.sc(), none, none, extensions, no_options,
                                                                no_options)
    else:               # 3.5: (context, sharedState, parentSessionState, extensions, options)
        jsession = jvm.org.apache.spark.sql.SparkSession(sc._jsc.sc(), none, none, extensions, no_options)
    return SparkSession(sc, jsession)


def sieve_rules(session):
    """The class names of spark-sieve's (package `sieve`) rules and strategies in a classic session's optimizer,
    planner and analyzer: empty for a vanilla session."""
    state = session._jsparkSession.sessionState()
    found = []
    batches = state.optimizer().batches()
    for i in range(batches.size()):
        rules = batches.apply(i).rules()
        found += [rules.apply(j).getClass().getName() for j in range(rules.size())]
    strategies = state.planner().strategies()
    found += [strategies.apply(i).getClass().getName() for i in range(strategies.size())]
    for rules in (state.analyzer().extendedResolutionRules(), state.analyzer().extendedCheckRules()):
        found += [rules.apply(i).getClass().getName() for i in range(rules.size())]
    return sorted({name for name in found if name.startswith("sieve.")})


@contextmanager
def settings_on(session, settings):
    """`settings` set on `session` for the block (on a vanilla session, only those that are not spark.sieve.*)."""
    if not sieve_rules(session):
        settings = {k: v for k, v in settings.items() if not k.startswith("spark.sieve.")}
    for k, v in settings.items():
        session.conf.set(k, v)
    try:
        yield
    finally:
        for k in settings:
            session.conf.unset(k)
