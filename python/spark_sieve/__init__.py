"""spark-sieve: a Spark SQL extension for filter-heavy queries.

    import spark_sieve as sieve
    spark = sieve.configure(SparkSession.builder.master("local[2]")).getOrCreate()
"""

from ._jar import jar_path
from .bulk_filter import BulkFilter, all_of, any_of, exclude, include
from .explain import explain
from ._version import __version__
from .errors import (
    ColumnError,
    ConfigError,
    ExtensionNotEnabledError,
    JarNotFoundError,
    JvmError,
    SieveError,
    SourceError,
    SparkVersionError,
    TreeError,
)
from ._jvm_errors import install_connect_conversion as _install_connect_conversion
from ._jvm_errors import install_conversion as _install_conversion
from .session import configure, jar_build_info, status

_install_conversion()
_install_connect_conversion()

__all__ = [
    "__version__",
    "BulkFilter",
    "all_of",
    "any_of",
    "exclude",
    "explain",
    "include",
    "ColumnError",
    "SourceError",
    "TreeError",
    "configure",
    "jar_build_info",
    "jar_path",
    "status",
    "ConfigError",
    "ExtensionNotEnabledError",
    "JarNotFoundError",
    "JvmError",
    "SieveError",
    "SparkVersionError",
]
