"""Delta Lake and Apache Iceberg in the tests: the line's releases (spark_sieve._spark_lines.TABLE_FORMATS), whose
jars dev/test fetches and names in SIEVE_FORMAT_JARS ("FORMAT=JAR,..."). They go on the classpath of the tests'
JVM when it starts (conftest), and a session reads tables in a format only with that format's extension, in the
spark-sieve session and the vanilla one alike."""

import os

import pyspark
import pytest
from py4j.java_gateway import JavaClass

from spark_sieve._spark_lines import TABLE_FORMATS
from spark_line import LINE

LINE_NAME = f"{LINE[0]}.{LINE[1]}"

# each format's session extension and catalog (spark_catalog for Delta: path tables `delta.`/dir``; a Hadoop
# catalog named `ice` over a directory for Iceberg, as `ice.db.table`)
EXTENSIONS = {"delta": "io.delta.sql.DeltaSparkSessionExtension",
              "iceberg": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"}


def jars():
    """{format: [jar, ...]} of SIEVE_FORMAT_JARS."""
    found = {}
    for pair in filter(None, os.environ.get("SIEVE_FORMAT_JARS", "").split(",")):
        name, _, jar = pair.partition("=")
        found.setdefault(name, []).append(jar)
    return found


def classpath():
    """Every format jar, for the JVM's classpath (empty when none)."""
    return os.pathsep.join(j for js in jars().values() for j in js)


def formats():
    """The formats of this line that have a release (sorted)."""
    return sorted(TABLE_FORMATS.get(LINE_NAME, {}))


def require(name):
    """Skips, naming the line, where `name` has no release for it; fails when it has one whose jars the JVM
    lacks (the tests were not run through dev/test)."""
    if name not in TABLE_FORMATS.get(LINE_NAME, {}):
        pytest.skip(f"{name} has no release for Spark {LINE_NAME} (pyspark {pyspark.__version__}) on Maven Central")
    missing = [j for j in jars().get(name, []) if not os.path.isfile(j)]
    if not jars().get(name) or missing:
        pytest.fail(f"{name}'s jars for Spark {LINE_NAME} are not in SIEVE_FORMAT_JARS "
                    f"({os.environ.get('SIEVE_FORMAT_JARS')!r}); run the tests through dev/test")


def extensions():
    """The session extensions of this line's formats (class names)."""
    return [EXTENSIONS[n] for n in formats()]


def session_settings(warehouse):
    """The settings of a session that reads this line's formats, beside their extensions: {key: value}."""
    names = formats()
    settings = {"spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                "spark.sql.catalog.ice.type": "hadoop",
                "spark.sql.catalog.ice.warehouse": str(warehouse),
                # two sessions (spark-sieve's, vanilla's) each hold a catalog: neither may keep an older snapshot
                "spark.sql.catalog.ice.cache-enabled": "false"} if "iceberg" in names else {}
    if "delta" in names:
        settings["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        # a snapshot's state in 2 partitions, not 50: each query of a small table lists its files in a job
        settings["spark.databricks.delta.snapshotPartitions"] = "2"
    return settings


def equality_deletes(spark, table, column, keys, name="equality-deletes"):
    """Commits an equality delete file removing the rows of `table` whose `column` is one of `keys`."""
    jvm = spark._jvm
    iceberg = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    schema = iceberg.schema()
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
    ids[0] = schema.findField(column).fieldId()
    deleted = schema.select([column])
    out = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
        iceberg.io().newOutputFile(f"{iceberg.location()}/data/{name}.parquet"))
    data = jvm.org.apache.iceberg.data
    if isinstance(data.GenericAppenderFactory, JavaClass):  # (removed in Iceberg 1.12, for GenericFileWriterFactory)
        factory = data.GenericAppenderFactory(schema, iceberg.spec(), ids, deleted, None)
        writer = factory.newEqDeleteWriter(out, jvm.org.apache.iceberg.FileFormat.PARQUET, None)
    else:
        factory = getattr(data, "GenericFileWriterFactory$Builder")(iceberg).equalityFieldIds(ids) \
            .equalityDeleteRowSchema(deleted).build()
        writer = factory.newEqualityDeleteWriter(out, iceberg.spec(), None)
    record = jvm.org.apache.iceberg.data.GenericRecord.create(deleted)
    for key in keys:
        writer.write(record.copy(column, key))
    writer.close()
    iceberg.newRowDelta().addDeletes(writer.toDeleteFile()).commit()
