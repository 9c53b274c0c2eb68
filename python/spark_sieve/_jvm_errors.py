"""How a JVM exception becomes a :class:`~spark_sieve.errors.SieveError` subclass, wherever it surfaces (a
spark-sieve call, ``spark.sql(...)``, an action; py4j and Spark Connect): the first spark-sieve exception in its
cause chain, by condition. The conditions, the JVM classes that carry them and the prefix of a bad value raised in
a task are the JVM's (``sieve.errors.SieveException``), read from the contract generated into the wheel
(:mod:`._contract`).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Dict, List, Optional, Pattern, Tuple, Type

from . import _contract
from .errors import ConfigError, SieveError, python_class


def _by_condition(condition: str) -> Type[SieveError]:
    """The SieveError subclass of a spark-sieve condition. Conditions, not JVM classes, identify an error: Spark
    re-wraps an AnalysisException raised during analysis (with the plan attached) into one of its own classes,
    keeping the condition and the message."""
    for jvm_class, known in _contract.conditions().items():
        if known == condition:
            return python_class(jvm_class)
    return SieveError


def _raised_condition() -> str:
    """The condition of a bad value a task raised with raise_error (a value source Spark's own scan reads,
    joined, not held as a set)."""
    return _contract.conditions()[_contract.raised()["class"]]


def _raised(throwable: Any, spark_throwable: bool) -> Optional[str]:
    """spark-sieve's text given to raise_error, without its prefix, or None when it is not ours: a
    SparkThrowable's errorMessage parameter (Spark 4), a plain RuntimeException's message (Spark 3.5)."""
    text = (throwable.getMessageParameters().get("errorMessage") if spark_throwable else throwable.getMessage()) or ""
    prefix = _contract.raised()["prefix"]
    return text[len(prefix):] if text.startswith(prefix) else None


def _condition(throwable: Any) -> Optional[str]:
    """A SparkThrowable's error condition: ``getCondition`` from Spark 4.0, ``getErrorClass`` before."""
    import pyspark

    condition: Optional[str] = (throwable.getErrorClass() if pyspark.__version__.startswith("3.")
                                else throwable.getCondition())
    return condition


def _sieve_throwable(throwable: Any) -> Optional[Tuple[Any, str, str]]:
    """The first spark-sieve exception in a JVM throwable's cause chain (one of spark-sieve's conditions, or a joined
    value source's bad value raised with raise_error), as (throwable, condition, message)."""
    from py4j.java_gateway import is_instance_of  # type: ignore[import-untyped, unused-ignore]
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    while throwable is not None:
        raised = None
        if is_instance_of(gateway, throwable, "org.apache.spark.SparkThrowable"):
            condition = _condition(throwable)
            if condition is not None and condition in _contract.conditions().values():
                return throwable, condition, throwable.getMessageParameters().get("message") or throwable.getMessage()
            if condition == "USER_RAISED_EXCEPTION":
                raised = _raised(throwable, spark_throwable=True)
        elif throwable.getClass().getName() == "java.lang.RuntimeException":  # raise_error on Spark 3.5
            raised = _raised(throwable, spark_throwable=False)
        if raised is not None:
            return throwable, _raised_condition(), raised
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
    captured: Any = _captured_class(_by_condition(condition))  # (its __init__ is PySpark's)
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
        if condition is not None and condition in _contract.conditions().values():
            return _by_condition(condition), parameters.get("message") or str(converted), None
        text = parameters.get("errorMessage") or ""
        prefix = _contract.raised()["prefix"]
        if condition == "USER_RAISED_EXCEPTION" and text.startswith(prefix):
            return _by_condition(_raised_condition()), text[len(prefix):], None
    if chain[0][0] is None and info is not None:  # a Spark 3.5 server sends no condition: its classes and message
        found = _condition_35(json.loads(info.metadata.get("classes") or "[]"), str(converted))
        if found is not None:
            return _by_condition(found[0]), found[1], found[0]
    return None


def _condition_35(classes: List[str], message: str) -> Optional[Tuple[str, str]]:
    """(condition, message) of a Spark 3.5 Connect error spark-sieve raised, from its JVM classes and message."""
    conditions = _contract.conditions()  # (3.5's Connect errors name the JVM classes but not the condition)
    for name in classes:
        if name in conditions:
            return conditions[name], message
    # a setting's error raised during analysis, which 3.5's analyzer re-throws as its own class (the message
    # kept): only spark-sieve's messages start with a spark.sieve.* key
    if _CONFIG_MESSAGE.match(message):
        return next(c for n, c in conditions.items() if python_class(n) is ConfigError), message
    raised = _raised_in_task().search(message)  # raise_error's text, in a failed job's message
    return (_raised_condition(), raised.group(1)) if raised else None


_CONFIG_MESSAGE = re.compile(r"spark\.sieve\.[\w.]+: ")


def _raised_in_task() -> Pattern[str]:
    """raise_error's text in a Spark 3.5 job's failure message."""
    return re.compile(r"java\.lang\.RuntimeException: " + re.escape(_contract.raised()["prefix"]) + r"([^\n]*)")


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
