"""Typed errors. Every error spark-sieve raises on purpose is a :class:`SieveError`.

A spark-sieve exception from the JVM arrives as the subclass of its role (``sieve.errors.SieveConfigException``,
condition ``SIEVE_CONFIG_INVALID`` -> :class:`ConfigError`), with the JVM's message, wherever it
surfaces: a spark-sieve call, ``spark.sql(...)``, an action. It is also PySpark's own
``AnalysisException`` (with ``getCondition()``, e.g. ``SIEVE_CONFIG_INVALID``), so code that catches
PySpark's errors keeps working: importing spark_sieve extends PySpark's JVM-exception conversion to
recognise spark-sieve's exceptions anywhere in the cause chain (:func:`install_conversion`).

The Python class of ``sieve.errors.Sieve<Role>Exception`` is ``<Role>Error``; how a JVM exception becomes one
is :mod:`._jvm_errors`.
"""

from __future__ import annotations

from typing import Optional, Type


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


def python_class(jvm_class: str) -> Type[SieveError]:
    """The SieveError subclass of a spark-sieve JVM exception class: ``<Role>Error`` for
    ``sieve.errors.Sieve<Role>Exception`` (SieveError for a role this package has no class of)."""
    name = jvm_class.rsplit(".", 1)[-1]
    role = name[len("Sieve"):-len("Exception")] if name.startswith("Sieve") and name.endswith("Exception") else ""
    found = globals().get(f"{role}Error") if role else None
    return found if isinstance(found, type) and issubclass(found, SieveError) else SieveError
