"""configure(): put the bundled jar and the extension on a SparkSession builder."""

from __future__ import annotations

import os
import zipfile
from typing import Any, Dict, Optional

import pyspark
from pyspark.sql import SparkSession

from . import _connect
from ._facade import EXTENSION_CLASS, Facade
from ._jar import jar_path
from ._versions import same_minor
from .errors import JarNotFoundError, SparkVersionError


def _csv_append(current: Optional[str], item: str) -> str:
    items = [x.strip() for x in (current or "").split(",") if x.strip()]
    if item not in items:
        items.append(item)
    return ",".join(items)


def jar_build_info(path: Optional[str] = None) -> Dict[str, str]:
    """What the bundled jar was built from: {'version', 'sparkVersion', 'scalaVersion'}."""
    with zipfile.ZipFile(path or jar_path()) as jar:
        text = jar.read("sieve/sieve-build.properties").decode("utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def configure(builder: SparkSession.Builder, jar: Optional[str] = None) -> SparkSession.Builder:
    """Add the bundled jar to ``spark.jars`` and append ``sieve.SieveExtensions`` to
    ``spark.sql.extensions`` (keeping what the builder already holds). Calling it twice adds nothing
    twice. Returns the builder, so ``configure(SparkSession.builder).getOrCreate()`` reads well.
    ``jar``: another spark-sieve jar to load instead of the bundled one (an older build, to compare).

    Spark Connect: these settings are the server's, fixed when it starts, and a client cannot set them. A builder
    of a client of a server elsewhere (``.remote("sc://...")``) is returned as it is: start that server with
    them. A builder that starts a local server (``.remote("local[2]")``, ``spark.api.mode=connect``) gets them
    for its server (with spark-sieve's Connect plugin), and its client only the settings a client may set.

    Raises SparkVersionError when the installed pyspark is not the Spark line the jar was built for.
    """
    if _connect.remote_server(builder):
        return builder
    path = os.path.abspath(jar) if jar else jar_path()
    if not os.path.isfile(path):
        raise JarNotFoundError(f"no spark-sieve jar at {path} (the jar= passed to configure)")
    built_for = jar_build_info(path)["sparkVersion"]
    if not same_minor(pyspark.__version__, built_for):
        raise SparkVersionError(
            f"this spark-sieve jar was built for Spark {built_for}, but pyspark {pyspark.__version__} "
            f"is installed; install pyspark {'.'.join(built_for.split('.')[:2])}.x"
        )
    options = builder._options  # pyspark keeps the builder's settings here; there is no getter
    builder.config("spark.jars", _csv_append(options.get("spark.jars"), path))
    builder.config("spark.sql.extensions", _csv_append(options.get("spark.sql.extensions"), EXTENSION_CLASS))
    # bulk filters from Spark Connect clients (a local server started by .remote("local") takes the
    # builder's settings; a classic session ignores it)
    builder.config(_connect.PLUGIN_SETTING, _csv_append(options.get(_connect.PLUGIN_SETTING), _connect.PLUGIN_CLASS))
    if _connect.local_server(builder):
        _connect.install_local_server_settings()
    return builder


def status(spark: Any) -> Dict[str, str]:
    """spark-sieve's view of a session: versions, registration, every setting's effective value.

    Raises ExtensionNotEnabledError when the session lacks the jar or the extension, and
    ConfigError when a ``spark.sieve.*`` setting is unknown or malformed.
    """
    if _connect.is_connect(spark):
        return _connect.status(spark)
    return Facade(spark).status()
