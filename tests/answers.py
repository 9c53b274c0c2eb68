"""Comparing two query answers as multisets of rows, shared by the TPC-DS test and the benchmarks.

Doubles are rounded to 6 significant digits, and when that alone disagrees, the rows are paired again
in sorted order with a relative tolerance (for a value just at a rounding boundary); anything else,
decimals included, must be equal.
"""

import math
from collections import Counter
from decimal import Decimal


def _norm_value(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return 0.0
        return float(f"{v:.5e}")        # 6 significant digits
    if isinstance(v, (list, tuple)):
        return tuple(_norm_value(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm_value(x)) for k, x in v.items()))
    if isinstance(v, bytearray):  # PySpark 3.5's BINARY (4.x gives bytes)
        return bytes(v)
    return v


def _norm_row(row):
    return tuple(_norm_value(v) for v in row)


def _sort_key(row):
    # None first, numbers with numbers, anything else grouped by its type ("NaN" is a str)
    def key(v):
        if v is None:
            return (0, "", 0)
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return (1, "", v)
        return (2, type(v).__name__, v)
    return tuple(key(v) for v in row)


def _close(a, b, rel_tol):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rel_tol) for x, y in zip(a, b))
    return a == b


def diff_answers(expected, got, rel_tol=1e-6):
    """``None`` when ``got`` equals ``expected`` as a multiset of rows (floats as described in the
    module docstring), else ``(only_in_expected, only_in_got)``: lists of normalized rows."""
    exp_n, got_n = Counter(map(_norm_row, expected)), Counter(map(_norm_row, got))
    if exp_n == got_n:
        return None
    if len(expected) == len(got):
        a = sorted(expected, key=lambda r: _sort_key(_norm_row(r)))
        b = sorted(got, key=lambda r: _sort_key(_norm_row(r)))
        if all(_close(x, y, rel_tol) for x, y in zip(a, b)):
            return None
    only_exp, only_got = exp_n - got_n, got_n - exp_n
    return sorted(only_exp.elements(), key=_sort_key), sorted(only_got.elements(), key=_sort_key)
