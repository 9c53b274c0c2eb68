"""The single door into the JVM: ``sieve.api.PythonFacade``.

Python checks its arguments before calling; JVM exceptions come back as ``SieveError`` subclasses.
"""

from __future__ import annotations

from typing import Any, Dict

from py4j.java_gateway import JavaClass  # type: ignore[import-untyped, unused-ignore]
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped, unused-ignore]

from ._jvm_errors import from_jvm
from .errors import ExtensionNotEnabledError, JvmError, SieveError

EXTENSION_CLASS = "sieve.SieveExtensions"

_HOW_TO_ENABLE = (
    "Create the session with spark_sieve.configure(SparkSession.builder).getOrCreate() before any other "
    "session exists in this process, or pass the jar (spark_sieve.jar_path()) with --jars and set "
    f"spark.sql.extensions={EXTENSION_CLASS}."
)


def translate(error: Py4JJavaError) -> SieveError:
    """The SieveError for a Py4JJavaError: the first spark-sieve exception in its cause chain."""
    throwable = error.java_exception
    name = throwable.getClass().getName()
    return from_jvm(throwable) or JvmError(f"{name}: {throwable.getMessage()}", jvm_class=name)


class Facade:
    """Calls into ``sieve.api.PythonFacade`` for one session, after checking the extension is on (or, for a
    call that asks nothing of the session, ``needs_extension=False``: that the jar is loaded)."""

    def __init__(self, spark: Any, needs_extension: bool = True) -> None:
        jvm = getattr(spark, "_jvm", None)
        if jvm is None:
            raise SieveError(
                "this spark-sieve call needs a classic SparkSession or a Spark Connect session (tree.apply, "
                f"explain and status take either); got {type(spark).__name__}."
            )
        facade = jvm.sieve.api.PythonFacade
        if not isinstance(facade, JavaClass):
            raise ExtensionNotEnabledError(
                "the spark-sieve jar is not on this session's classpath. " + _HOW_TO_ENABLE
            )
        self._facade = facade
        self._jsession = spark._jsparkSession
        if needs_extension and not self.call("isRegistered", self._jsession):
            raise ExtensionNotEnabledError(
                f"the spark-sieve jar is loaded but {EXTENSION_CLASS} is not in this session's "
                "spark.sql.extensions. " + _HOW_TO_ENABLE
            )

    def call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._facade, method)(*args)
        except Py4JJavaError as e:
            raise translate(e) from None

    def status(self) -> Dict[str, str]:
        return dict(self.call("status", self._jsession))
