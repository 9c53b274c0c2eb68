"""Typed errors. Every error spark-sieve raises on purpose is a :class:`SieveError`.

A spark-sieve exception from the JVM arrives as the subclass that matches its JVM class
(``sieve.errors.SieveConfigException`` -> :class:`ConfigError`), with the JVM's message, wherever it
surfaces: a spark-sieve call, ``spark.sql(...)``, an action. It is also PySpark's own
``AnalysisException`` (with ``getCondition()``, e.g. ``SIEVE_CONFIG_INVALID``), so code that catches
PySpark's errors keeps working: importing spark_sieve extends PySpark's JVM-exception conversion to
recognise spark-sieve's exceptions anywhere in the cause chain (:func:`install_conversion`).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Dict, List, Optional, Tuple, Type


class SieveError(Exception):
    """Base class of every spark-sieve error."""

    def __init__(self, message: str, jvm_class: Optional[str] = None) -> None:
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
JVM_CONDITIONS: Dict[str, Type[SieveError]] = {
    "SIEVE_CONFIG_INVALID": ConfigError,
    "SIEVE_SOURCE_INVALID": SourceError,
    "SIEVE_COLUMN_INVALID": ColumnError,
    "SIEVE_TREE_INVALID": TreeError,
}


# what a bad value read by Spark's own scan (a source joined, not held as a set) raises with raise_error
RAISED_PREFIX = "spark-sieve: "


def _raised(throwable: Any, spark_throwable: bool) -> Optional[str]:
    """spark-sieve's text given to raise_error, without its prefix, or None when it is not ours: a
    SparkThrowable's errorMessage parameter (Spark 4), a plain RuntimeException's message (Spark 3.5)."""
    text = (throwable.getMessageParameters().get("errorMessage") if spark_throwable else throwable.getMessage()) or ""
    return text[len(RAISED_PREFIX):] if text.startswith(RAISED_PREFIX) else None


def _condition(throwable: Any) -> Optional[str]:
    """A SparkThrowable's error condition: ``getCondition`` from Spark 4.0, ``getErrorClass`` before."""
    import pyspark

    condition: Optional[str] = (throwable.getErrorClass() if pyspark.__version__.startswith("3.")
                                else throwable.getCondition())
    return condition


def _sieve_throwable(throwable: Any) -> Optional[Tuple[Any, str, str]]:
    """The first spark-sieve exception in a JVM throwable's cause chain (a ``SIEVE_*`` condition, or a joined
    value source's bad value raised with raise_error), as (throwable, condition, message)."""
    from py4j.java_gateway import is_instance_of  # type: ignore[import-untyped, unused-ignore]
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


_CAPTURED: Dict[Type[SieveError], Type[SieveError]] = {}


def _captured_class(cls: Type[SieveError]) -> Type[SieveError]:
    """``cls`` that is also PySpark's captured AnalysisException (made once per class)."""
    if cls not in _CAPTURED:
        from pyspark.errors.exceptions.captured import AnalysisException

        def __init__(self: Any, origin: Any, message: str, condition: str) -> None:
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


def from_jvm(throwable: Any) -> Optional[SieveError]:
    """The SieveError for a JVM throwable whose cause chain holds a spark-sieve exception, else None."""
    found = _sieve_throwable(throwable)
    if found is None:
        return None
    origin, condition, message = found
    captured: Any = _captured_class(JVM_CONDITIONS.get(condition, SieveError))  # (its __init__ is PySpark's)
    error: SieveError = captured(origin, message, condition)
    return error


def install_conversion() -> None:
    """Make PySpark convert a JVM exception caused by spark-sieve into its SieveError subclass
    (it would otherwise arrive as a bare ``Py4JJavaError`` or a generic Spark error). Idempotent."""
    from pyspark.errors.exceptions import captured

    original = captured.convert_exception
    if getattr(original, "_spark_sieve", False):
        return

    def convert_exception(e: Any) -> Any:
        return from_jvm(e) or original(e)

    convert_exception._spark_sieve = True  # type: ignore[attr-defined]
    captured.convert_exception = convert_exception


# Spark Connect: a server's error arrives as a gRPC status that PySpark's ``convert_exception`` (in
# pyspark.errors.exceptions.connect, imported by name into the Connect client) turns into one of its own
# classes; spark-sieve's conditions are read from the error and each cause the server sent with it.
_CONNECT_CLASSES: Dict[Tuple[type, type], type] = {}


def _connect_sieve_error(converted: Any, info: Any, resp: Any) -> Optional[Tuple[Type[SieveError], str, Optional[str]]]:
    """(SieveError subclass, message, the condition where the server left it out) for a converted Connect error
    caused by spark-sieve, else None."""
    chain = []
    condition = getattr(converted, "getCondition", getattr(converted, "getErrorClass", lambda: None))()
    chain.append((condition, converted.getMessageParameters() or {}))
    for error in (resp.errors if resp is not None else ()):
        if error.HasField("spark_throwable"):
            chain.append((error.spark_throwable.error_class, dict(error.spark_throwable.message_parameters)))
    for condition, parameters in chain:
        if condition and condition.startswith("SIEVE_"):
            return JVM_CONDITIONS.get(condition, SieveError), parameters.get("message") or str(converted), None
        text = parameters.get("errorMessage") or ""
        if condition == "USER_RAISED_EXCEPTION" and text.startswith(RAISED_PREFIX):
            return SourceError, text[len(RAISED_PREFIX):], None
    if chain[0][0] is None and info is not None:  # a Spark 3.5 server sends no condition: its classes and message
        found = _condition_35(json.loads(info.metadata.get("classes") or "[]"), str(converted))
        if found is not None:
            return JVM_CONDITIONS[found[0]], found[1], found[0]
    return None


def _condition_35(classes: List[str], message: str) -> Optional[Tuple[str, str]]:
    """(condition, message) of a Spark 3.5 Connect error spark-sieve raised, from its JVM classes and message."""
    for name in classes:
        if name in JVM_CLASS_CONDITIONS:
            return JVM_CLASS_CONDITIONS[name], message
    # a setting's error raised during analysis, which 3.5's analyzer re-throws as its own class (the message
    # kept): only spark-sieve's messages start with a spark.sieve.* key
    if _CONFIG_MESSAGE.match(message):
        return "SIEVE_CONFIG_INVALID", message
    raised = _RAISED_IN_TASK.search(message)  # raise_error's text, in a failed job's message
    return ("SIEVE_SOURCE_INVALID", raised.group(1)) if raised else None


# Spark 3.5's Connect errors name the JVM exception's classes but not its condition
JVM_CLASS_CONDITIONS: Dict[str, str] = {
    "sieve.errors.SieveConfigException": "SIEVE_CONFIG_INVALID",
    "sieve.errors.SieveSourceException": "SIEVE_SOURCE_INVALID",
    "sieve.errors.SieveColumnException": "SIEVE_COLUMN_INVALID",
    "sieve.errors.SieveTreeException": "SIEVE_TREE_INVALID",
}
_CONFIG_MESSAGE = re.compile(r"spark\.sieve\.[\w.]+: ")
_RAISED_IN_TASK = re.compile(r"java\.lang\.RuntimeException: " + re.escape(RAISED_PREFIX) + r"([^\n]*)")


def from_connect(converted: Any, info: Any, resp: Any) -> Any:
    """``converted`` (PySpark's Connect exception) as the SieveError subclass that is also its class, when
    spark-sieve caused it; else ``converted`` itself."""
    found = _connect_sieve_error(converted, info, resp)
    if found is None:
        return converted
    cls, message, missing_condition = found
    key: Tuple[type, type] = (cls, type(converted))
    if key not in _CONNECT_CLASSES:
        _CONNECT_CLASSES[key] = type(cls.__name__, tuple(key), {"__module__": __name__, "__doc__": cls.__doc__})
    made: Any = _CONNECT_CLASSES[key]
    error: Any = made.__new__(made)
    error.__dict__.update(converted.__dict__)  # PySpark's fields as they are (their names differ by line)
    error.args = converted.args
    classes = json.loads(info.metadata.get("classes") or "[]") if info is not None else []
    error.message, error.jvm_class = message, (classes[0] if classes else None)
    if missing_condition is not None:  # (PySpark 3.5) what getErrorClass() gives, as on a classic session
        error.error_class = missing_condition
    return error


def install_connect_conversion() -> None:
    """Make PySpark's Spark Connect client raise spark-sieve's errors as their SieveError subclass (it would
    otherwise give PySpark's AnalysisException with a SIEVE_* condition). Idempotent; nothing without
    PySpark's Connect dependencies (grpcio)."""
    try:
        from pyspark.errors.exceptions import connect
    except ImportError:
        return
    original: Any = connect.convert_exception
    if getattr(original, "_spark_sieve", False):
        return

    # (PySpark 3.5's takes (info, truncated_message); 4.x's adds the error details, ``resp``, and more)
    def connect_convert_exception(info: Any, truncated_message: str, *args: Any, **kwargs: Any) -> Any:
        resp = args[0] if args else kwargs.get("resp")
        return from_connect(original(info, truncated_message, *args, **kwargs), info, resp)

    setattr(connect_convert_exception, "_spark_sieve", True)
    setattr(connect, "convert_exception", connect_convert_exception)
    # the client imports the name: patch its copy too when it is loaded already
    core = sys.modules.get("pyspark.sql.connect.client.core")
    if core is not None and hasattr(core, "convert_exception"):
        setattr(core, "convert_exception", connect_convert_exception)
