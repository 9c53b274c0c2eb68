"""Typed errors. Every error spark-sieve raises on purpose is a :class:`SieveError`.

A spark-sieve exception from the JVM arrives as the subclass that matches its JVM class
(``sieve.errors.SieveConfigException`` -> :class:`ConfigError`), with the JVM's message, wherever it
surfaces: a spark-sieve call, ``spark.sql(...)``, an action. It is also PySpark's own
``AnalysisException`` (with ``getCondition()``, e.g. ``SIEVE_CONFIG_INVALID``), so code that catches
PySpark's errors keeps working: importing spark_sieve extends PySpark's JVM-exception conversion to
recognise spark-sieve's exceptions anywhere in the cause chain (:func:`install_conversion`).
"""


class SieveError(Exception):
    """Base class of every spark-sieve error."""

    def __init__(self, message, jvm_class=None):
        super().__init__(message)
        self.message = message
        self.jvm_class = jvm_class


class ExtensionNotEnabledError(SieveError):
    """The session was created without the spark-sieve jar or without ``sieve.SieveExtensions``."""


class JarNotFoundError(SieveError):
    """The spark-sieve jar is not inside the installed package (a broken or source-tree install)."""


class SparkVersionError(SieveError):
    """The running Spark is not the one the bundled jar was built for."""


class ConfigError(SieveError):
    """A ``spark.sieve.*`` setting is unknown or holds a malformed value."""


class SourceError(SieveError):
    """A value source (file, directory, DataFrame) that is missing, unreadable or of an unknown format."""


class ColumnError(SieveError):
    """A column that the input DataFrame or a value source does not have, or cannot be a filter key."""


class TreeError(SieveError):
    """A malformed filter tree: an empty AND/OR, an unknown operator, a bad argument, bad JSON."""


class JvmError(SieveError):
    """An unexpected JVM exception inside spark-sieve; ``jvm_class`` names it."""


# The condition (Spark error class) of each spark-sieve JVM exception -> Python class. Conditions, not
# JVM classes, identify them: Spark re-wraps an AnalysisException raised during analysis (with the plan
# attached) into one of its own classes, keeping the condition and the message.
JVM_CONDITIONS = {
    "SIEVE_CONFIG_INVALID": ConfigError,
    "SIEVE_SOURCE_INVALID": SourceError,
    "SIEVE_COLUMN_INVALID": ColumnError,
    "SIEVE_TREE_INVALID": TreeError,
}


# what a bad value read by Spark's own scan (a source joined, not held as a set) raises with raise_error
RAISED_PREFIX = "spark-sieve: "


def _raised(throwable, spark_throwable):
    """spark-sieve's text given to raise_error, without its prefix, or None when it is not ours: a
    SparkThrowable's errorMessage parameter (Spark 4), a plain RuntimeException's message (Spark 3.5)."""
    text = (throwable.getMessageParameters().get("errorMessage") if spark_throwable else throwable.getMessage()) or ""
    return text[len(RAISED_PREFIX):] if text.startswith(RAISED_PREFIX) else None


def _condition(throwable):
    """A SparkThrowable's error condition: ``getCondition`` from Spark 4.0, ``getErrorClass`` before."""
    import pyspark

    return throwable.getErrorClass() if pyspark.__version__.startswith("3.") else throwable.getCondition()


def _sieve_throwable(throwable):
    """The first spark-sieve exception in a JVM throwable's cause chain (a ``SIEVE_*`` condition, or a joined
    value source's bad value raised with raise_error), as (throwable, condition, message)."""
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    while throwable is not None:
        raised = None
        if is_instance_of(gateway, throwable, "org.apache.spark.SparkThrowable"):
            condition = _condition(throwable)
            if condition and condition.startswith("SIEVE_"):
                return throwable, condition, throwable.getMessageParameters().get("message") or throwable.getMessage()
            if condition == "USER_RAISED_EXCEPTION":
                raised = _raised(throwable, spark_throwable=True)
        elif throwable.getClass().getName() == "java.lang.RuntimeException":  # raise_error on Spark 3.5
            raised = _raised(throwable, spark_throwable=False)
        if raised is not None:
            return throwable, "SIEVE_SOURCE_INVALID", raised
        throwable = throwable.getCause()
    return None


_CAPTURED = {}


def _captured_class(cls):
    """``cls`` that is also PySpark's captured AnalysisException (made once per class)."""
    if cls not in _CAPTURED:
        from pyspark.errors.exceptions.captured import AnalysisException

        def __init__(self, origin, message, condition):
            AnalysisException.__init__(self, origin=origin)
            self._sieve_condition = condition
            # without the plan Spark appends to an analysis error's message (PySpark 3.5 reads .desc)
            self._desc = self.desc = message
            self.message = message
            self.jvm_class = origin.getClass().getName()

        members = {"__init__": __init__, "__module__": __name__, "__doc__": cls.__doc__}
        if not hasattr(AnalysisException, "getCondition"):  # PySpark 3.5 has getErrorClass only
            members["getCondition"] = lambda self: self._sieve_condition
        _CAPTURED[cls] = type(cls.__name__, (cls, AnalysisException), members)
    return _CAPTURED[cls]


def from_jvm(throwable):
    """The SieveError for a JVM throwable whose cause chain holds a spark-sieve exception, else None."""
    found = _sieve_throwable(throwable)
    if found is None:
        return None
    origin, condition, message = found
    return _captured_class(JVM_CONDITIONS.get(condition, SieveError))(origin, message, condition)


def install_conversion():
    """Make PySpark convert a JVM exception caused by spark-sieve into its SieveError subclass
    (it would otherwise arrive as a bare ``Py4JJavaError`` or a generic Spark error). Idempotent."""
    from pyspark.errors.exceptions import captured

    original = captured.convert_exception
    if getattr(original, "_spark_sieve", False):
        return

    def convert_exception(e):
        return from_jvm(e) or original(e)

    convert_exception._spark_sieve = True
    captured.convert_exception = convert_exception
