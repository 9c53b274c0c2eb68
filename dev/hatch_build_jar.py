"""Hatch build hook: one jar per supported Spark line (python/spark_sieve/_spark_lines.py), each built with
sbt (dev/sbt --spark LINE package) when it is missing or older than its sources, bundled in the wheel as
spark_sieve/jars/<jar>; `spark_sieve.jar_path()` picks the running Spark's. Also the Spark Connect schema's
descriptor set (spark_sieve/connect.desc) and what Python takes from the JVM rather than copies (the value-source
formats, the error conditions: spark_sieve/jvm_contract.json, written by the jars). SIEVE_WHEEL_LINES (e.g. "4.3")
builds a wheel of some lines only, for a quicker local loop."""

import glob
import json
import os
import runpy
import subprocess

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# what a jar is built from (its tests are not: a change to them leaves every line's jar current)
_JAR_INPUTS = ("scala/src/main", "build.sbt", "project/build.properties", "python/spark_sieve/_version.py")


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


def wheel_lines(root):
    """The Spark lines the wheel carries a jar for: all supported ones, or SIEVE_WHEEL_LINES' (checked)."""
    supported = [line for line, _, _ in runpy.run_path(
        os.path.join(root, "python", "spark_sieve", "_spark_lines.py"))["SPARK_LINES"]]
    wanted = [w.strip() for w in os.environ.get("SIEVE_WHEEL_LINES", "").split(",") if w.strip()]
    unknown = [w for w in wanted if w not in supported]
    if unknown:
        raise RuntimeError(f"SIEVE_WHEEL_LINES names {', '.join(unknown)}: the supported Spark lines are "
                           f"{', '.join(supported)}")
    return wanted or supported


def ensure_jars(root, lines, version):
    """The jar of each Spark line, those missing or stale built first: two sbt processes at a time (scalac
    keeps one core busy; a cold build of every line takes half as long)."""
    newest_input = _newest_input_mtime(root)
    found = {ln: _find_jar(root, ln, version) for ln in lines}
    stale = [ln for ln, jar in found.items() if not jar or os.path.getmtime(jar) < newest_input]
    env = {k: v for k, v in os.environ.items() if k != "SIEVE_PYSPARK_JARS"}  # each line's own jars
    running = []
    for line in stale + [None]:
        while running and (line is None or len(running) >= 2):
            done, proc = running.pop(0)
            if proc.wait() != 0:
                raise RuntimeError(f"building the jar for Spark {done} failed (dev/sbt --spark {done} package)")
        if line is not None:
            running.append((line, subprocess.Popen([os.path.join(root, "dev", "sbt"), "--spark", line, "package"],
                                                   cwd=root, env=env)))
    jars = {ln: _find_jar(root, ln, version) for ln in lines}
    missing = [ln for ln, jar in jars.items() if not jar]
    if missing:
        raise RuntimeError(f"sbt package produced no jar for Spark {', '.join(missing)} in target/jars/")
    return jars


def connect_descriptor_set(root):
    """proto/spark_sieve/connect.proto compiled by protoc (grpcio-tools) into a descriptor set, rebuilt when the
    schema changed: the Python client's message classes are made from it at run time (spark_sieve/_connect.py)."""
    source = os.path.join(root, "proto", "spark_sieve", "connect.proto")
    out = os.path.join(root, "target", "proto", "connect.desc")
    if not os.path.isfile(out) or os.path.getmtime(out) < os.path.getmtime(source):
        from grpc_tools import protoc

        os.makedirs(os.path.dirname(out), exist_ok=True)
        if protoc.main(["protoc", f"-I{os.path.join(root, 'proto')}", f"--descriptor_set_out={out}", source]) != 0:
            raise RuntimeError(f"protoc failed on {source}")
    return out


def jvm_contract(root, jars):
    """spark_sieve/jvm_contract.json: `sieve.api.PythonFacade.contract()`, written by each line's jar (run on the
    Spark jars it was compiled against, .cache/spark-<line>/jars), which must all write the same."""
    out = os.path.join(root, "target", "contract", "jvm_contract.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    written = {}
    for line, jar in sorted(jars.items()):
        spark_jars = os.path.join(root, ".cache", f"spark-{line}", "jars")
        if not os.path.isdir(spark_jars):
            raise RuntimeError(f"no Spark {line} jars at {spark_jars} to run the jar on (dev/sbt --spark {line} fetches them)")
        each = f"{out}.{line}"
        subprocess.run([java, "-cp", os.pathsep.join([jar, os.path.join(spark_jars, "*")]), "sieve.api.PythonFacade", each],
                       check=True)
        with open(each, encoding="utf-8") as f:
            written[line] = json.load(f)
    if any(c != next(iter(written.values())) for c in written.values()):
        raise RuntimeError(f"the jars of Spark {', '.join(written)} disagree on the Python contract: {written}")
    os.replace(each, out)
    return out


class JarBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        jars = ensure_jars(self.root, wheel_lines(self.root), self.metadata.version)
        for jar in jars.values():
            build_data["force_include"][jar] = f"spark_sieve/jars/{os.path.basename(jar)}"
        build_data["force_include"][jvm_contract(self.root, jars)] = "spark_sieve/jvm_contract.json"
        build_data["force_include"][connect_descriptor_set(self.root)] = "spark_sieve/connect.desc"
