"""Typed errors. Every error spark-sieve raises on purpose is a :class:`SieveError`.

JVM exceptions thrown by the facade arrive as the subclass that matches their JVM class
(``sieve.errors.SieveConfigException`` -> :class:`ConfigError`), carrying the JVM's message.
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


# JVM exception class -> Python class. A JVM SieveException subclass not listed maps to SieveError.
JVM_ERRORS = {
    "sieve.errors.SieveException": SieveError,
    "sieve.errors.SieveConfigException": ConfigError,
    "sieve.errors.SieveSourceException": SourceError,
    "sieve.errors.SieveColumnException": ColumnError,
    "sieve.errors.SieveTreeException": TreeError,
}
