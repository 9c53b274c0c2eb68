"""A real Spark standalone cluster on 127.0.0.1 — a master and N workers started from the installed
pyspark's own launcher (bin/spark-class), each in its own JVM — for tests that must run on executors."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pyspark


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    def __init__(self, workdir, workers=2, cores_per_worker=1, worker_memory="1g", start_timeout=120):
        self.workdir = str(workdir)
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.worker_memory = worker_memory
        self.start_timeout = start_timeout
        self.spark_home = os.path.dirname(pyspark.__file__)
        self.port = _free_port()
        self.webui_port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self._procs = []

    def _launch(self, name, args):
        log = open(os.path.join(self.workdir, f"{name}.log"), "wb")
        env = dict(os.environ, SPARK_HOME=self.spark_home, SPARK_LOCAL_IP="127.0.0.1",
                   PYSPARK_PYTHON=sys.executable, SPARK_WORKER_DIR=os.path.join(self.workdir, "work"))
        cmd = [os.path.join(self.spark_home, "bin", "spark-class"), *args]
        # own process group, so stop() ends the launcher script and the JVM it starts together
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._procs.append((name, proc, log))

    def _bound_ports(self):
        """The ports the master really bound. Spark moves to the next port when the one asked for was taken
        between _free_port() and the bind (another test's JVM got it: CI once read a foreign web UI there)."""
        bound = dict(re.findall(r"Successfully started service '(sparkMaster|MasterUI)' on port (\d+)",
                                self.log("master")))
        if len(bound) < 2:
            return False
        self.port, self.webui_port = int(bound["sparkMaster"]), int(bound["MasterUI"])
        self.url = f"spark://127.0.0.1:{self.port}"
        return True

    def master_state(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as r:
            return json.load(r)

    def _wait(self, what, ready):
        deadline = time.time() + self.start_timeout
        while time.time() < deadline:
            for name, proc, _ in self._procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}; "
                                       f"see {self.workdir}/{name}.log:\n{self.log(name)[-3000:]}")
            try:
                if ready():
                    return
            except (OSError, ValueError):  # not up yet, or not (yet) the master's JSON
                pass
            time.sleep(0.5)
        raise TimeoutError(f"standalone cluster: no {what} after {self.start_timeout}s; logs in {self.workdir}")

    def start(self):
        self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                "--port", str(self.port), "--webui-port", str(self.webui_port)])
        self._wait("master's ports", self._bound_ports)
        self._wait("master", lambda: self.master_state()["status"] == "ALIVE")
        for i in range(self.workers):
            self._launch(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                        "--cores", str(self.cores_per_worker), "--memory", self.worker_memory,
                                        "--webui-port", str(_free_port()), self.url])
        self._wait(f"{self.workers} workers", lambda: self.master_state()["aliveworkers"] == self.workers)
        return self

    def wait_for_executors(self, spark, count=None, timeout=120):
        """Executors register after the session starts; block until `count` (one per worker) have."""
        count = self.workers if count is None else count
        scala_context = spark.sparkContext._jsc.sc()
        deadline = time.time() + timeout
        while scala_context.getExecutorIds().size() < count:
            if time.time() > deadline:
                raise TimeoutError(f"only {scala_context.getExecutorIds().size()} of {count} executors "
                                   f"registered after {timeout}s; logs in {self.workdir}")
            time.sleep(0.5)

    def log(self, name):
        with open(os.path.join(self.workdir, f"{name}.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        for _, proc, _ in reversed(self._procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _, proc, log in reversed(self._procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.close()
        self._procs = []

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
