"""Spark Connect: ``tree.apply(df)``, ``BulkFilter.from_json``, ``explain`` and ``status`` for a Connect DataFrame
or session, without py4j.

Each call is a ``spark.connect.Relation`` whose ``extension`` holds one of spark-sieve's messages
(proto/spark_sieve/connect.proto); the server's ``sieve.connect.SieveRelationPlugin`` turns it into a plan.
The message classes come from the descriptor set protoc builds from that file (``connect.desc`` in this
package, made by dev/build): unlike generated ``_pb2`` modules it is tied to no protobuf runtime version, so
one wheel serves the protobuf of every pyspark line.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

T = TypeVar("T")

PLUGIN_CLASS = "sieve.connect.SieveRelationPlugin"
PLUGIN_SETTING = "spark.connect.extensions.relation.classes"
_DESCRIPTOR_SET = os.path.join(os.path.dirname(__file__), "connect.desc")
_messages: Dict[str, Any] = {}


def is_connect(obj: object) -> bool:
    """True for a Spark Connect DataFrame or SparkSession (on PySpark 3.5 neither is a subclass of the classic one)."""
    return type(obj).__module__.startswith("pyspark.sql.connect.")


def is_connect_dataframe(obj: object) -> bool:
    return is_connect(obj) and hasattr(obj, "_plan")


def _message(name: str) -> Any:
    """A new message of spark-sieve's Connect schema, e.g. ``BulkFilterRelation``."""
    if not _messages:
        from google.protobuf import descriptor_pb2, descriptor_pool  # type: ignore[import-untyped, unused-ignore]

        from .errors import SieveError

        try:
            with open(_DESCRIPTOR_SET, "rb") as f:
                files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
        except OSError as e:
            raise SieveError(f"spark-sieve's Spark Connect schema is missing from the package ({e}); "
                             "reinstall spark-sieve") from None
        pool = descriptor_pool.DescriptorPool()  # its own pool: nothing else's names can clash with ours
        for proto in files.file:
            pool.Add(proto)
        for proto in files.file:
            for message in proto.message_type:
                _messages[message.name] = _message_class(pool.FindMessageTypeByName(f"{proto.package}.{message.name}"))
    return _messages[name]()


def _message_class(descriptor: Any) -> Any:
    try:
        from google.protobuf.message_factory import GetMessageClass  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        from google.protobuf.message_factory import MessageFactory  # type: ignore[import-untyped, unused-ignore]

        return MessageFactory(descriptor.file.pool).GetPrototype(descriptor)
    return GetMessageClass(descriptor)


def _relation_bytes(df: Any) -> bytes:
    """A Connect DataFrame's plan, as the serialized ``spark.connect.Relation`` the server reads."""
    return bytes(df._plan.plan(df.sparkSession.client).SerializeToString())


def _dataframe(session: Any, message: Any, child: Any = None) -> Any:
    """A Connect DataFrame whose plan is ``message`` in a Relation's extension."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    plan = _relation_class()(message, child._plan if child is not None else None)
    frame: Any = ConnectDataFrame  # (its constructor differs between lines)
    return frame.withPlan(plan, session) if hasattr(frame, "withPlan") else frame(plan, session)  # 3.5: withPlan


_relation_classes: List[Any] = []


def _relation_class() -> Any:
    """The Connect plan node that packs one of spark-sieve's messages into ``Relation.extension`` (made on
    first use, as pyspark's Connect modules import only where Connect's dependencies are installed)."""
    if not _relation_classes:
        from pyspark.sql.connect.plan import LogicalPlan

        class SieveRelation(LogicalPlan):  # type: ignore[misc, unused-ignore]
            def __init__(self, message: Any, child: Any) -> None:
                super().__init__(child)
                self._message = message

            def plan(self, client: Any) -> Any:
                relation = self._create_proto_relation()
                relation.extension.Pack(self._message)
                return relation

        _relation_classes.append(SieveRelation)
    return _relation_classes[0]


def with_server_jar(builder: Any, jar: str) -> Any:
    """``builder`` (a ``.remote("local...")`` one) with Spark Connect's server jar, for Spark 3.5, whose pyspark
    lacks it: in ``spark.jars`` for a JVM still to start, and in the class loader of the one this process runs
    already (the driver's class path is fixed when its JVM starts, e.g. by an earlier classic session)."""
    from pyspark import SparkContext

    jvm: Any = SparkContext._jvm
    if jvm is not None:
        jvm.org.apache.spark.sql.api.python.PythonSQLUtils.addJarToCurrentClassLoader(jar)
    return builder.config("spark.jars", jar)


def _remote_url(builder: Any) -> Optional[str]:
    options = builder._options  # (no getter)
    url: Optional[str] = options.get("spark.remote", os.environ.get("SPARK_REMOTE"))
    return url


def remote_server(builder: Any) -> bool:
    """True for a builder of a Spark Connect client whose server runs elsewhere (``.remote("sc://...")``)."""
    url = _remote_url(builder)
    return url is not None and url.startswith("sc://")


def local_server(builder: Any) -> bool:
    """True for a builder that starts a local Spark Connect server and a client of it: ``.remote("local...")``,
    or ``spark.api.mode=connect`` with a local master (Spark 4)."""
    url = _remote_url(builder)
    if url is not None:
        return not url.startswith("sc://")
    mode = str(builder._options.get("spark.api.mode", os.environ.get("SPARK_API_MODE", ""))).lower()
    return mode == "connect"


def install_local_server_settings() -> None:
    """Make a local Connect server that PySpark starts from a builder ``spark_sieve.configure`` set up hand its
    client only the settings a client may set (the runtime SQL ones), as PySpark means to: PySpark starts the
    server with every setting of the builder, then gives them all to the client too (4.1 on: its filter is
    applied to a copy), which warns CANNOT_MODIFY_CONFIG for each static one (``spark.jars``,
    ``spark.sql.extensions``, ...). Idempotent."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    original: Any = RemoteSparkSession._start_connect_server
    if getattr(original, "_spark_sieve", False):
        return

    def start_connect_server(master: str, opts: Dict[str, Any]) -> Any:
        started = original(master, opts)
        # (opts is the dict PySpark then gives the client's builder)
        if PLUGIN_CLASS in str(opts.get(PLUGIN_SETTING, "")):
            from pyspark import SparkContext

            jvm: Any = SparkContext._jvm
            runtime = {c._1() for c in jvm.org.apache.spark.sql.api.python.PythonSQLUtils.listRuntimeSQLConfigs()}
            for key in [k for k in opts if k not in runtime]:
                del opts[key]
        return started

    setattr(start_connect_server, "_spark_sieve", True)
    RemoteSparkSession._start_connect_server = staticmethod(start_connect_server)  # type: ignore[method-assign, assignment, unused-ignore]


def stop_local(session: Any) -> None:
    """Stop a session made by ``builder.remote("local...")`` so that the next builder in this process makes a
    classic session again: PySpark leaves environment variables behind that turn every later builder into a
    Connect client."""
    try:
        session.stop()
    finally:
        for name in ("SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
            os.environ.pop(name, None)


def apply_bulk_filter(df: Any, tree_json: str, frames: List[Any]) -> Any:
    """``tree.apply(df)`` on a Connect DataFrame. The server checks the tree as the classic call does; its
    errors surface here (the schema is asked for at once), as the same SieveError subclasses."""
    for frame in frames:
        if not is_connect_dataframe(frame):
            from .errors import TreeError

            raise TreeError(f"a DataFrame source of a Spark Connect DataFrame must be a Connect DataFrame too, "
                            f"got {type(frame).__module__}.{type(frame).__name__}")
    message = _message("BulkFilterRelation")
    message.input = _relation_bytes(df)
    message.tree_json = tree_json
    message.frames.extend(_relation_bytes(f) for f in frames)
    result = _dataframe(df.sparkSession, message, child=df)
    _on_server(lambda: result.schema)  # analysed now: a bad tree fails at apply(), as on a classic session
    return result


def status(spark: Any) -> Dict[str, str]:
    """``spark_sieve.status`` of a Connect session: the server's view, as a dict."""
    message = _message("InfoRelation")
    message.kind = 0  # STATUS
    rows = _on_server(lambda: _dataframe(spark, message).collect())
    return {row["key"]: row["value"] for row in rows}


def read_tree(spark: Any, tree_json: str) -> str:
    """``BulkFilter.from_json`` on a Connect session: the tree read and checked by the server, written back in
    ``to_json``'s form."""
    message = _message("InfoRelation")
    message.kind = 2  # TREE
    message.tree_json = tree_json
    row = _on_server(lambda: _dataframe(spark, message).collect())[0]
    text: str = row["tree_json"]
    return text


def explain_text(df: Any) -> Tuple[str, str]:
    """(bulk, dynamic) explain text of a Connect DataFrame's plan as it would start (the server plans it
    anew for each request, so no figures of an earlier run)."""
    message = _message("InfoRelation")
    message.kind = 1  # EXPLAIN
    message.input = _relation_bytes(df)
    row = _on_server(lambda: _dataframe(df.sparkSession, message).collect())[0]
    return row["bulk_filters"], row["dynamic_filters"]


def _on_server(call: Callable[[], T]) -> T:
    """``call()``; a server without spark-sieve's plugin is an ExtensionNotEnabledError saying how to add it."""
    from .errors import ExtensionNotEnabledError

    try:
        return call()
    except Exception as e:  # noqa: BLE001 (Spark Connect's error classes differ between lines)
        if "No handler found for extension" not in str(e):
            raise
        raise ExtensionNotEnabledError(
            f"the Spark Connect server does not have spark-sieve's plugin: start it with the spark-sieve jar, "
            f"spark.sql.extensions=sieve.SieveExtensions and {PLUGIN_SETTING}={PLUGIN_CLASS} "
            "(spark_sieve.configure sets them for a local server)") from None
