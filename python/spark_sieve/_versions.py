"""Versions compared as parsed numbers, never as strings ("4.10" > "4.3")."""

from __future__ import annotations

import re


def parse_version(text: object) -> tuple[int, ...]:
    """'4.3.0' -> (4, 3, 0); '4.3.0.dev1' -> (4, 3, 0); trailing non-numeric parts are ignored."""
    parts: list[int] = []
    for piece in str(text).split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(parts)


def same_minor(a: str, b: str) -> bool:
    """True when both versions share major.minor (Spark's binary-compatibility line)."""
    return parse_version(a)[:2] == parse_version(b)[:2]
