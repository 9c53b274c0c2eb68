"""A session with spark-sieve: status, the master switch, and JVM errors mapped to Python errors."""

import pytest

import spark_sieve as sieve
from spark_sieve._facade import Facade


def test_status_reports_versions_registration_and_settings(spark):
    status = sieve.status(spark)
    assert status["registered"] == "true"
    assert status["version"] == sieve.__version__
    assert status["runningSpark"] == spark.version == status["builtForSpark"]
    assert status["spark.sieve.enabled"] == "true"
    # which of the wheel's jars the session loaded: the one of its Spark line
    assert status["jar"] == "file:" + sieve.jar_path(spark.version)
    assert status["builtForScala"].startswith(sieve.jar_path().rsplit("_", 1)[1].split("-")[0] + ".")


def test_master_switch_is_read_per_query(spark):
    spark.conf.set("spark.sieve.enabled", "false")
    try:
        assert sieve.status(spark)["spark.sieve.enabled"] == "false"
    finally:
        spark.conf.unset("spark.sieve.enabled")
    assert sieve.status(spark)["spark.sieve.enabled"] == "true"


def test_malformed_value_is_a_config_error_with_the_jvm_message(spark):
    spark.conf.set("spark.sieve.enabled", "maybe")
    try:
        with pytest.raises(sieve.ConfigError) as info:
            sieve.status(spark)
    finally:
        spark.conf.unset("spark.sieve.enabled")
    assert str(info.value) == "spark.sieve.enabled: 'maybe' is not a boolean (true or false)"
    assert info.value.jvm_class == "sieve.errors.SieveConfigException"
    assert isinstance(info.value, sieve.SieveError)


def test_unknown_key_is_a_config_error_that_suggests_the_right_one(spark):
    spark.conf.set("spark.sieve.enable", "false")
    try:
        with pytest.raises(sieve.ConfigError, match="spark.sieve.enable: unknown .*did you mean spark.sieve.enabled"):
            sieve.status(spark)
        # queries fail the same way, naming the key, rather than running with a setting ignored
        with pytest.raises(sieve.ConfigError, match="spark.sieve.enable: unknown"):
            spark.range(3).collect()
        spark.sql("SET spark.sieve.enable=true")  # commands still run, so SQL users can fix it
    finally:
        spark.conf.unset("spark.sieve.enable")
    assert spark.range(3).count() == 3


def test_a_retired_setting_keeps_queries_running_with_a_warning(spark):
    """A setting spark-sieve no longer reads (replaced by another) is not an unknown key: sessions that still set it
    run, and the JVM's log warns once, naming what took its place."""
    spark.conf.set("spark.sieve.dynamicFilter.readBytesPerCoreSecond", "64m")
    try:
        assert spark.range(3).count() == 3
        sieve.status(spark)
    finally:
        spark.conf.unset("spark.sieve.dynamicFilter.readBytesPerCoreSecond")


def test_unexpected_jvm_exception_becomes_jvm_error_naming_the_class(spark):
    with pytest.raises(sieve.JvmError) as info:
        Facade(spark).call("status", None)
    assert info.value.jvm_class == "java.lang.NullPointerException"
    assert "NullPointerException" in str(info.value)


def test_a_bad_setting_met_by_a_query_is_a_config_error_with_the_message_first(spark):
    spark.conf.set("spark.sieve.dynamicFilter.maxInSetSize", "lots")
    try:
        for action in (lambda: spark.sql("SELECT 1").collect(), lambda: spark.range(3).count()):
            with pytest.raises(sieve.ConfigError) as info:
                action()
            assert str(info.value) == "spark.sieve.dynamicFilter.maxInSetSize: 'lots' is not a whole number"
            assert info.value.getCondition() == "SIEVE_CONFIG_INVALID"
            from pyspark.errors import AnalysisException
            assert isinstance(info.value, AnalysisException)   # PySpark's own handlers still catch it
    finally:
        spark.conf.unset("spark.sieve.dynamicFilter.maxInSetSize")


def test_settings_are_known_to_spark_conf_with_their_defaults(spark):
    assert spark.conf.get("spark.sieve.enabled") == "true"
    assert spark.conf.get("spark.sieve.dynamicFilter.maxBloomBytes") == "16m"
    listed = {r.key: r.value for r in spark.sql("SET -v").collect() if r.key.startswith("spark.sieve.")}
    assert {"spark.sieve.enabled", "spark.sieve.subqueryOrder.enabled"} <= set(listed)
    # the settings a user decides (each feature on / off, memory bounds); the tuning ones are internal: known, set
    # the same way, but not listed, as Spark's own internal ones
    assert len(listed) <= 8, sorted(listed)
    assert spark.conf.get("spark.sieve.dynamicFilter.waitWeight") == "1.0"
    assert "spark.sieve.dynamicFilter.waitWeight" not in listed
    assert "spark.sieve.testing.placeEveryFilter" not in listed


def test_byte_sizes_take_units(spark):
    spark.conf.set("spark.sieve.dynamicFilter.maxBloomBytes", "1m")
    try:
        assert sieve.status(spark)["spark.sieve.dynamicFilter.maxBloomBytes"] == str(1 << 20)
    finally:
        spark.conf.unset("spark.sieve.dynamicFilter.maxBloomBytes")


def test_an_empty_directory_value_source_is_a_source_error(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(sieve.SourceError, match="empty.*no data files"):
        sieve.include("id", str(tmp_path / "empty"), format="parquet").apply(spark.range(3))
