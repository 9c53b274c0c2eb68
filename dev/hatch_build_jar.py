"""Hatch build hook: build the jar with sbt (through dev/sbt) when it is missing or older than its
sources, and bundle it in the wheel as spark_sieve/jars/<jar>."""

import glob
import os
import subprocess

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

_JAR_INPUTS = ("scala", "build.sbt", "project/build.properties", "python/spark_sieve/_version.py")


def _newest_input_mtime(root):
    paths = []
    for rel in _JAR_INPUTS:
        path = os.path.join(root, rel)
        paths += [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, files in os.walk(path) for f in files]
    return max(os.path.getmtime(p) for p in paths)


def _find_jar(root, line, version):
    jars = glob.glob(os.path.join(root, "target", "jars", f"spark-sieve-spark{line}_*-{version}.jar"))
    return max(jars, key=os.path.getmtime) if jars else None


def ensure_jar(root, version):
    """The jar of the Spark line of the pyspark this build runs with (or SIEVE_PYSPARK_JARS' Spark)."""
    env = dict(os.environ)
    if "SIEVE_PYSPARK_JARS" not in env:
        import pyspark  # a build requirement: its jars are what the jar compiles against

        env["SIEVE_PYSPARK_JARS"] = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    cores = glob.glob(os.path.join(env["SIEVE_PYSPARK_JARS"], "spark-core_*.jar"))
    if not cores:
        raise RuntimeError(f"no spark-core jar in {env['SIEVE_PYSPARK_JARS']}")
    spark_version = os.path.basename(cores[0])[: -len(".jar")].split("-", 2)[2]
    line = ".".join(spark_version.split(".")[:2])
    jar = _find_jar(root, line, version)
    if jar and os.path.getmtime(jar) >= _newest_input_mtime(root):
        return jar
    subprocess.run([os.path.join(root, "dev", "sbt"), "package"], cwd=root, env=env, check=True)
    jar = _find_jar(root, line, version)
    if not jar:
        raise RuntimeError(f"sbt package produced no target/jars/spark-sieve-spark{line}_*-{version}.jar")
    return jar


class JarBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        jar = ensure_jar(self.root, self.metadata.version)
        build_data["force_include"][jar] = f"spark_sieve/jars/{os.path.basename(jar)}"
