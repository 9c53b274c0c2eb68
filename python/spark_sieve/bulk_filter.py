"""Bulk filters: nested AND/OR trees of include/exclude filters whose values come from files.

    tree = sieve.include("region", "regions.txt") | (
        sieve.include("brand", "brands.csv") & sieve.exclude("color", "banned.parquet"))
    cars = tree.apply(cars_df)      # lazy; the plan holds one BulkFilter node
    sieve.explain(cars)             # the tree as written and as it will run, with costs

include(c, V) keeps rows whose c equals some value of V; exclude(c, V) keeps rows whose c equals none
(a NULL c is kept; NULLs in V match nothing). Duplicate input rows are kept exactly.

The tree travels to the JVM as JSON (``to_json``'s form); the JVM reads and checks it
(``sieve.bulkfilter.FilterTreeJson``), ``from_json`` included: Python only writes it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple, Type, Union

from pyspark.sql import DataFrame, SparkSession

from . import _connect, _contract
from ._facade import Facade
from .errors import ExtensionNotEnabledError, TreeError

# a value source: a path (str or os.PathLike) or a DataFrame (classic or Spark Connect)
Source = Union[str, "os.PathLike[str]", Any]


class BulkFilter:
    """A node of a filter tree. Build with include / exclude / all_of / any_of, or & and |."""

    def __and__(self, other: BulkFilter) -> AllOf:
        return AllOf(*_parts(self, AllOf), *_parts(_check_node(other, "&"), AllOf))

    def __or__(self, other: BulkFilter) -> AnyOf:
        return AnyOf(*_parts(self, AnyOf), *_parts(_check_node(other, "|"), AnyOf))

    def apply(self, df: DataFrame) -> DataFrame:
        """``df`` filtered by this tree, as a lazy DataFrame. Raises SourceError, ColumnError or TreeError
        naming what is wrong (a missing file, an unknown column, an empty AND/OR)."""
        if _connect.is_connect_dataframe(df):
            sources: List[Any] = []
            tree = self._read(df.sparkSession)
            result: DataFrame = _connect.apply_bulk_filter(df, json.dumps(tree._spec(sources)), sources)
            return result
        if not isinstance(df, DataFrame):
            raise TreeError(f"apply() takes a DataFrame, got {type(df).__name__}")
        spark = df.sparkSession
        frames: List[Any] = []
        spec = self._read(spark)._spec(frames)
        if any(_connect.is_connect_dataframe(f) for f in frames):
            raise TreeError("a DataFrame source of a classic DataFrame must be a classic DataFrame too")
        jvm: Any = spark._jvm
        jframes = jvm.java.util.ArrayList()
        for frame in frames:
            jframes.add(frame._jdf)
        jdf = Facade(spark).call("applyBulkFilter", df._jdf, json.dumps(spec), jframes)
        return DataFrame(jdf, spark)

    def to_json(self) -> str:
        """The tree as JSON (paths only: a DataFrame source cannot be written down)."""
        return json.dumps(self._spec(None), indent=2)

    @staticmethod
    def from_json(text: str) -> BulkFilter:
        """A tree from the JSON that ``to_json`` writes (the form a UI or a job config holds). The JVM of the
        active session reads it, raising TreeError naming the node that is wrong; read before any session with
        spark-sieve exists, it is read at ``apply()``, which raises the same errors."""
        if not isinstance(text, str):
            raise TreeError(f"from_json() takes the tree's JSON as a str, got {type(text).__name__}")
        spark = SparkSession.getActiveSession()
        try:
            return _read_json(spark, text) if spark is not None else _Unread(text)
        except ExtensionNotEnabledError:
            return _Unread(text)  # (apply() says so, on the session it is given)

    def __repr__(self) -> str:
        return self._render()

    def _spec(self, frames: Optional[List[Any]]) -> Dict[str, Any]:
        """The JSON form; DataFrame sources are appended to ``frames`` (None: they are an error)."""
        raise NotImplementedError

    def _read(self, spark: Any) -> BulkFilter:
        """This tree with each part ``from_json`` left unread read by ``spark``'s JVM."""
        return self

    def _render(self) -> str:
        raise NotImplementedError


class Leaf(BulkFilter):
    def __init__(self, include: bool, column: str, source: Source, value_column: Optional[str] = None,
                 format: Optional[str] = None) -> None:
        op = "include" if include else "exclude"
        if not isinstance(column, str) or not column:
            raise TreeError(f"{op}(): column must be a non-empty column name, got {column!r}")
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        is_frame = isinstance(source, DataFrame) or _connect.is_connect_dataframe(source)
        if not (is_frame or isinstance(source, str) and source):
            raise TreeError(f"{op}({column!r}, ...): source must be a path or a DataFrame, got {source!r}")
        if value_column is not None and (not isinstance(value_column, str) or not value_column):
            raise TreeError(f"{op}({column!r}, ...): value_column must be a column name, got {value_column!r}")
        formats = _contract.formats()
        if format is not None and (not isinstance(format, str) or format.lower() not in formats):
            raise TreeError(f"{op}({column!r}, ...): format must be one of {', '.join(formats)}, got {format!r}")
        if format is not None and not isinstance(source, str):
            raise TreeError(f"{op}({column!r}, ...): format= applies to paths, not to a DataFrame source")
        self.include, self.column, self.source = include, column, source
        self.value_column, self.format = value_column, format

    def _spec(self, frames: Optional[List[Any]]) -> Dict[str, Any]:
        if not isinstance(self.source, str):
            if frames is None:
                raise TreeError(f"{self._render()}: a DataFrame source cannot be written to JSON; use a path")
            source: Dict[str, Any] = {"dataframe": len(frames)}
            frames.append(self.source)
        else:
            source = {"path": self.source}
            if self.format:
                source["format"] = self.format
        spec = {"op": "include" if self.include else "exclude", "column": self.column, "source": source}
        if self.value_column:
            spec["value_column"] = self.value_column
        return spec

    def _render(self) -> str:
        src = repr(self.source) if isinstance(self.source, str) else "DataFrame"
        return f"{'include' if self.include else 'exclude'}({self.column!r}, {src})"


class _Node(BulkFilter):
    op = ""

    def __init__(self, *children: BulkFilter) -> None:
        for i, child in enumerate(children):
            _check_node(child, f"{self.op}[{i}]")
        self.children = tuple(children)

    def _spec(self, frames: Optional[List[Any]]) -> Dict[str, Any]:
        return {"op": self.op, "children": [c._spec(frames) for c in self.children]}

    def _read(self, spark: Any) -> BulkFilter:
        children = [c._read(spark) for c in self.children]
        return self if all(a is b for a, b in zip(children, self.children)) else type(self)(*children)

    def _render(self) -> str:
        return "(" + f" {self.op} ".join(c._render() for c in self.children) + ")"


class AllOf(_Node):
    op = "and"


class AnyOf(_Node):
    op = "or"


def _check_node(node: object, where: str) -> BulkFilter:
    if not isinstance(node, BulkFilter):
        raise TreeError(f"{where}: expected a filter (include, exclude, all_of, any_of), got {node!r}")
    return node


def _parts(node: BulkFilter, kind: Type[_Node]) -> Tuple[BulkFilter, ...]:
    """`a & b & c` is one AND of three; an explicit all_of(all_of(a, b), c) stays as written."""
    return node.children if isinstance(node, _Node) and type(node) is kind else (node,)


class _Unread(BulkFilter):
    """A tree ``from_json`` was given with no spark-sieve session about: read by the JVM at ``apply()``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _read(self, spark: Any) -> BulkFilter:
        return _read_json(spark, self.text)

    def _spec(self, frames: Optional[List[Any]]) -> Dict[str, Any]:
        spark = SparkSession.getActiveSession()
        if spark is None:
            raise TreeError("a tree from from_json() is read by a session's JVM: to_json() needs an active "
                            "SparkSession with spark-sieve")
        return self._read(spark)._spec(frames)

    def _render(self) -> str:
        return f"BulkFilter.from_json({self.text!r})"


def _read_json(spark: Any, text: str) -> BulkFilter:
    """The tree ``text`` holds, read and checked by ``spark``'s JVM, which writes it back in ``to_json``'s form."""
    canonical = (_connect.read_tree(spark, text) if _connect.is_connect(spark)
                 else Facade(spark, needs_extension=False).call("canonicalTree", text))  # (the jar's parser alone)
    return _from_canonical(json.loads(canonical))


def _from_canonical(spec: Dict[str, Any]) -> BulkFilter:
    """The tree of a spec the JVM has checked and written in ``to_json``'s form."""
    if "children" in spec:
        children = [_from_canonical(c) for c in spec["children"]]
        return AllOf(*children) if spec["op"] == "and" else AnyOf(*children)
    source = spec["source"]
    return Leaf(spec["op"] == "include", spec["column"], source["path"], spec.get("value_column"), source.get("format"))


def include(column: str, source: Source, value_column: Optional[str] = None,
            format: Optional[str] = None) -> Leaf:
    """Keep rows whose ``column`` equals some value of ``source`` (a path or a DataFrame)."""
    return Leaf(True, column, source, value_column, format)


def exclude(column: str, source: Source, value_column: Optional[str] = None,
            format: Optional[str] = None) -> Leaf:
    """Keep rows whose ``column`` equals no value of ``source``; rows with a NULL ``column`` are kept."""
    return Leaf(False, column, source, value_column, format)


def all_of(*children: BulkFilter) -> AllOf:
    """AND of the children."""
    return AllOf(*children)


def any_of(*children: BulkFilter) -> AnyOf:
    """OR of the children."""
    return AnyOf(*children)
