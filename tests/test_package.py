"""The installed wheel: where it is, what it bundles, and that its parts agree on versions."""

import glob
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import pyspark

import spark_sieve as sieve


def test_tests_run_against_the_installed_wheel_not_the_source_tree():
    assert "site-packages" in sieve.__file__, sieve.__file__
    assert importlib.metadata.version("spark-sieve") == sieve.__version__


def test_jar_is_bundled_inside_the_package(jar):
    package_dir = os.path.dirname(sieve.__file__)
    assert os.path.dirname(jar) == os.path.join(package_dir, "jars")
    line = ".".join(pyspark.__version__.split(".")[:2])
    scala = sieve.jar_build_info(jar)["scalaVersion"].rsplit(".", 1)[0]
    assert os.path.basename(jar) == f"spark-sieve-spark{line}_{scala}-{sieve.__version__}.jar"
    files = importlib.metadata.files("spark-sieve")
    assert any(str(f).endswith(os.path.basename(jar)) for f in files), "the wheel's RECORD lists no jar"
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert "sieve/SieveExtensions.class" in names
    # only our shims into Spark-internal APIs live in Spark's packages (a class's companions and closures beside it)
    ours_in_spark_packages = {n[:-len(".class")].split("$")[0] for n in names
                              if n.startswith("org/apache/spark/") and n.endswith(".class")}
    assert ours_in_spark_packages == {"org/apache/spark/sql/SparkShims",
                                      "org/apache/spark/sql/SieveDatasets",
                                      "org/apache/spark/sql/SieveSqlConf",
                                      "org/apache/spark/sql/SieveV2Literals",
                                      "org/apache/spark/sql/execution/adaptive/SieveStageCache",
                                      "org/apache/spark/sql/execution/joins/SieveBroadcastKeys",
                                      "org/apache/spark/scheduler/SieveRunningTasks"}, \
        "Spark must not be bundled"


def test_jar_version_equals_package_version(jar):
    assert sieve.jar_build_info(jar)["version"] == sieve.__version__


def test_jar_was_built_with_the_scala_and_spark_pyspark_ships(jar):
    info = sieve.jar_build_info(jar)
    jars_dir = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    [scala_lib] = glob.glob(os.path.join(jars_dir, "scala-library-*.jar"))
    assert info["scalaVersion"] == os.path.basename(scala_lib)[len("scala-library-"):-len(".jar")]
    assert info["sparkVersion"] == pyspark.__version__


def test_jar_path_explains_a_missing_jar(monkeypatch, tmp_path):
    monkeypatch.setattr("spark_sieve._jar._JARS_DIR", str(tmp_path))
    try:
        sieve.jar_path()
    except sieve.JarNotFoundError as e:
        assert "pip install" in str(e) and str(tmp_path) in str(e)
        assert isinstance(e, sieve.SieveError)
    else:
        raise AssertionError("jar_path() found a jar in an empty folder")


def test_jar_path_picks_the_running_spark_line_and_names_the_supported_ones():
    from spark_sieve._spark_lines import SPARK_LINES

    line = ".".join(pyspark.__version__.split(".")[:2])
    assert sieve.jar_path() == sieve.jar_path(spark_version=line) == sieve.jar_path(spark_version=pyspark.__version__)
    assert sieve.jar_build_info(sieve.jar_path())["sparkLine"] == line
    supported = ", ".join(ln for ln, _, _ in SPARK_LINES)
    for outside in ("3.4", "5.0.1", "banana"):
        try:
            sieve.jar_path(spark_version=outside)
        except sieve.SparkVersionError as e:
            assert f"supports Spark {supported}; not Spark {outside}" in str(e), str(e)
        else:
            raise AssertionError(f"jar_path accepted Spark {outside}")


def test_readme_lists_the_supported_spark_lines():
    from spark_sieve._spark_lines import compatibility_table

    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    assert compatibility_table() in readme, "README's Spark table is stale: run dev/gen-compat-docs"


def test_the_wheel_bundles_a_jar_for_every_spark_line():
    from spark_sieve._spark_lines import SPARK_LINES

    for line, release, scala in SPARK_LINES:
        jar = sieve.jar_path(spark_version=line)
        assert os.path.basename(jar) == f"spark-sieve-spark{line}_{scala}-{sieve.__version__}.jar"
        info = sieve.jar_build_info(jar)
        assert (info["sparkLine"], info["sparkVersion"], info["version"]) == (line, release, sieve.__version__)


def test_the_wheel_requires_a_pyspark_of_the_supported_lines_and_keeps_the_one_installed():
    """One wheel for every line: its pyspark requirement admits each supported line, so that installing it
    never swaps a 3.5 cluster's pyspark for the newest (it once asked for 4.3 only), and admits no other."""
    from packaging.requirements import Requirement
    from spark_sieve._spark_lines import SPARK_LINES

    pyspark_req, = [r for r in map(Requirement, importlib.metadata.requires("spark-sieve"))
                    if r.name == "pyspark" and r.marker is None]
    for line, release, _ in SPARK_LINES:
        assert {f"{line}.0", release} <= set(pyspark_req.specifier.filter([f"{line}.0", release])), pyspark_req
    newest = tuple(map(int, SPARK_LINES[-1][0].split(".")))
    oldest = tuple(map(int, SPARK_LINES[0][0].split(".")))
    outside = [f"{oldest[0]}.{oldest[1] - 1}.4", f"{newest[0]}.{newest[1] + 1}.0"]
    assert not list(pyspark_req.specifier.filter(outside)), pyspark_req
    # pip's own view of this virtualenv (its line's pyspark): nothing spark-sieve requires is missing
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert "spark-sieve" not in check.stdout + check.stderr, check.stdout + check.stderr


def test_the_package_is_typed_and_mypy_strict_clean(tmp_path):
    assert (pathlib.Path(sieve.__file__).parent / "py.typed").is_file()
    # the installed package, as a user's type checker finds it (run elsewhere: no cache left in the project)
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "spark_sieve"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_wheel_carries_the_connect_schema():
    # the descriptor set protoc built from proto/spark_sieve/connect.proto: the Connect client's messages
    message = sieve._connect._message("BulkFilterRelation")
    assert [f.name for f in message.DESCRIPTOR.fields] == ["input", "tree_json", "frames"]
    assert [f.name for f in sieve._connect._message("InfoRelation").DESCRIPTOR.fields] == ["kind", "input",
                                                                                          "tree_json"]


def test_the_wheel_carries_the_jars_contract(spark):
    # what Python takes from the JVM (formats, error conditions), generated into the wheel by its build: the same
    # as the running line's jar says, and a Python class for each JVM error class
    contract = json.loads(spark._jvm.sieve.api.PythonFacade.contract())
    assert sieve._contract.contract() == contract
    assert "parquet" in contract["formats"]
    assert {sieve.errors.python_class(e["class"]) for e in contract["errors"]} == {
        sieve.ConfigError, sieve.SourceError, sieve.ColumnError, sieve.TreeError}


def test_the_test_extra_installs_what_the_tests_import():
    import tomllib

    root = pathlib.Path(__file__).parent.parent
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    required = [line.split("#")[0].strip() for line in (root / "dev" / "requirements.txt").read_text().splitlines()]
    wanted = {r for r in required if r and not r.startswith(("hatchling", "grpcio-tools"))}  # (build tools)
    assert wanted <= set(extra), f"pyproject's test extra lacks {sorted(wanted - set(extra))}"
    assert any(e.startswith("pyspark[connect]") for e in extra)
