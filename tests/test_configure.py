"""configure(builder): jar on spark.jars, extension appended, idempotent, version-checked.
These tests only touch builders; no session is started."""

import pytest
from pyspark.sql import SparkSession

import spark_sieve as sieve

EXT = "sieve.SieveExtensions"


def test_adds_the_bundled_jar_and_the_extension(jar):
    builder = sieve.configure(SparkSession.Builder())
    assert builder._options["spark.jars"] == jar
    assert builder._options["spark.sql.extensions"] == EXT


def test_appends_to_extensions_and_jars_already_set(jar):
    builder = (SparkSession.Builder()
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.jars", "/opt/other.jar"))
    returned = sieve.configure(builder)
    assert returned is builder
    assert builder._options["spark.sql.extensions"] == f"io.delta.sql.DeltaSparkSessionExtension,{EXT}"
    assert builder._options["spark.jars"] == f"/opt/other.jar,{jar}"


def test_called_twice_adds_nothing_twice(jar):
    builder = sieve.configure(sieve.configure(SparkSession.Builder().config("spark.sql.extensions", "a.B")))
    assert builder._options["spark.sql.extensions"] == f"a.B,{EXT}"
    assert builder._options["spark.jars"] == jar


def test_keeps_an_extension_list_that_already_names_sieve():
    builder = SparkSession.Builder().config("spark.sql.extensions", f" {EXT} , a.B")
    assert sieve.configure(builder)._options["spark.sql.extensions"] == f"{EXT},a.B"


def test_refuses_a_pyspark_of_another_spark_line(monkeypatch, jar):
    monkeypatch.setattr("pyspark.__version__", "4.10.0")  # as strings "4.10" < "4.3"; as versions, not 4.3
    with pytest.raises(sieve.SparkVersionError, match=r"supports Spark 3\.5, .*4\.3; not Spark 4\.10\.0"):
        sieve.configure(SparkSession.Builder())
    # a jar passed in is checked against the Spark it was built for
    with pytest.raises(sieve.SparkVersionError, match=r"built for Spark \d+\.\d+\.\d+, but pyspark 4\.10\.0"):
        sieve.configure(SparkSession.Builder(), jar=jar)


def test_accepts_another_patch_release(monkeypatch):
    import pyspark

    line = ".".join(pyspark.__version__.split(".")[:2])
    monkeypatch.setattr("pyspark.__version__", f"{line}.77")
    assert sieve.configure(SparkSession.Builder())._options["spark.jars"] == sieve.jar_path(line)


def test_loads_another_build_of_the_jar_when_given_one(jar, tmp_path):
    other = tmp_path / "spark-sieve-older.jar"
    other.write_bytes(open(jar, "rb").read())
    builder = sieve.configure(SparkSession.Builder(), jar=str(other))
    assert builder._options["spark.jars"] == str(other)
    assert builder._options["spark.sql.extensions"] == EXT


def test_a_missing_jar_is_named(tmp_path):
    with pytest.raises(sieve.JarNotFoundError, match="no spark-sieve jar at .*missing.jar"):
        sieve.configure(SparkSession.Builder(), jar=str(tmp_path / "missing.jar"))


def test_a_client_of_a_server_elsewhere_is_left_as_it_is():
    # the jar, the extension and the Connect plugin are the server's, set where it starts: a client cannot set them
    builder = SparkSession.Builder().remote("sc://spark.example.com:15002")
    assert sieve.configure(builder)._options == {"spark.remote": "sc://spark.example.com:15002"}
