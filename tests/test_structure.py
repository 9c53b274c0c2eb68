"""The house's structure: small source files, short front documents, no import circle in the Python package.
(The Scala packages' allowed imports are PackageGraphSuite's.)"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "spark_sieve"
MAX_SOURCE_LINES = 400
MAX_LINES = {"README.md": 350, "bench/RESULTS.md": 300}


def _lines(path):
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_main_source_file_over_400_lines():
    sources = [*(ROOT / "scala" / "src" / "main").rglob("*.scala"), *PACKAGE.rglob("*.py")]
    assert len(sources) > 50
    too_long = {str(p.relative_to(ROOT)): n for p in sources if (n := _lines(p)) > MAX_SOURCE_LINES}
    assert not too_long, f"split these (at most {MAX_SOURCE_LINES} lines each): {too_long}"


def test_readme_and_results_stay_short():
    too_long = {name: n for name, limit in MAX_LINES.items() if (n := _lines(ROOT / name)) > limit}
    assert not too_long, f"over their limits {MAX_LINES}: {too_long}"


def _package_imports(path):
    """The package's modules `path` imports, at any depth of its code (a function's lazy import counts too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spark_sieve."):
            found.add(node.module.split(".")[1])
    return found


def test_the_python_package_has_no_import_circle():
    modules = {p.stem: p for p in PACKAGE.glob("*.py")}
    graph = {name: _package_imports(p) & set(modules) - {name} for name, p in modules.items()}
    assert graph["_jvm_errors"] >= {"_contract", "errors"}  # the walk sees imports (a check that can fail)

    def circle_from(start, path, seen):
        for nxt in sorted(graph[start]):
            if nxt == path[0]:
                return path + [nxt]
            if nxt not in seen:
                seen.add(nxt)
                found = circle_from(nxt, path + [nxt], seen)
                if found:
                    return found
        return None

    circles = [c for name in sorted(graph) if (c := circle_from(name, [name], {name}))]
    assert not circles, f"import circles: {[' -> '.join(c) for c in circles]}"
