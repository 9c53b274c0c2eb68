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
        with pytest.raises(Exception, match="spark.sieve.enable: unknown"):
            spark.range(3).collect()
        spark.sql("SET spark.sieve.enable=true")  # commands still run, so SQL users can fix it
    finally:
        spark.conf.unset("spark.sieve.enable")
    assert spark.range(3).count() == 3


def test_unexpected_jvm_exception_becomes_jvm_error_naming_the_class(spark):
    with pytest.raises(sieve.JvmError) as info:
        Facade(spark).call("status", None)
    assert info.value.jvm_class == "java.lang.NullPointerException"
    assert "NullPointerException" in str(info.value)
