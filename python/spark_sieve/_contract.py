"""What the JVM declares and the Python bindings follow rather than copy: the value-source formats, each
spark-sieve error class with its condition, and how a task raises a bad value. Generated from the jar when the
wheel is built (``sieve.api.PythonFacade.contract``, called by dev/hatch_build_jar.py) into
``jvm_contract.json`` in this package; tests/test_package.py checks it against the running jar's.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

_PATH = os.path.join(os.path.dirname(__file__), "jvm_contract.json")
_loaded: List[Dict[str, Any]] = []


def contract() -> Dict[str, Any]:
    """The generated contract: ``formats``, ``errors`` ([{class, condition}]), ``raised`` ({prefix, class})."""
    if not _loaded:
        try:
            with open(_PATH, encoding="utf-8") as f:
                _loaded.append(json.load(f))
        except (OSError, ValueError) as e:
            from .errors import SieveError

            raise SieveError(f"spark-sieve's contract with its jar is missing from the package ({e}); "
                             "reinstall spark-sieve") from None
    return _loaded[0]


def formats() -> List[str]:
    """The formats a value source's ``format=`` may name (``sieve.bulkfilter.ValueSources.Formats``)."""
    found: List[str] = contract()["formats"]
    return found


def conditions() -> Dict[str, str]:
    """Each spark-sieve JVM exception class's name -> its condition (``sieve.errors.SieveException.conditions``)."""
    return {e["class"]: e["condition"] for e in contract()["errors"]}


def raised() -> Dict[str, str]:
    """What starts the text of a bad value a task raises with raise_error (``prefix``), and the JVM class whose
    condition such an error has (``class``)."""
    found: Dict[str, str] = contract()["raised"]
    return found
