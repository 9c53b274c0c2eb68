# Sourced by the dev/ scripts: paths, the Spark line they work on, and that line's virtualenv, made
# idempotently. Everything a new machine needs comes from PyPI (pip) and Maven Central (Maven, sbt).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
export PIP_CACHE_DIR="$CACHE/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { echo "[$(basename "$0")] $*" >&2; }

# The Spark line: `--spark LINE` among the sourcing script's arguments (taken out of them: a sourced file
# shares its caller's positional parameters), else $SIEVE_SPARK_LINE, else the newest. The lines and the
# pyspark release each is built and tested against are in python/spark_sieve/_spark_lines.py.
_rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    --spark) SIEVE_SPARK_LINE="${2:?--spark needs a Spark line, e.g. --spark 3.5}"; shift 2 ;;
    --spark=*) SIEVE_SPARK_LINE="${1#--spark=}"; shift ;;
    *) _rest+=("$1"); shift ;;
  esac
done
set -- ${_rest[@]+"${_rest[@]}"}
_line="$(python3 "$ROOT/python/spark_sieve/_spark_lines.py" "${SIEVE_SPARK_LINE:-}")"
read -r SPARK_LINE PYSPARK_VERSION SCALA_BINARY <<<"$_line"
export SIEVE_SPARK_LINE="$SPARK_LINE"
NEWEST_LINE="$(python3 "$ROOT/python/spark_sieve/_spark_lines.py" | cut -d' ' -f1)"

# The newest line's virtualenv is .cache/venv; an older line's, .cache/venv-spark<line>.
if [ "$SPARK_LINE" = "$NEWEST_LINE" ]; then VENV="$CACHE/venv"; else VENV="$CACHE/venv-spark$SPARK_LINE"; fi
PY="$VENV/bin/python"

# (Re)installs dev/requirements.txt and the line's pyspark into the venv when either changed since the
# last install.
ensure_venv() {
  mkdir -p "$CACHE"
  # one process at a time per virtualenv (.ci/run prepares the other lines' while the first one's tests run)
  exec {venv_lock}>"$VENV.lock"
  flock "$venv_lock"
  local stamp="$VENV/.requirements.sha" want
  if [ ! -x "$PY" ]; then
    log "creating virtualenv $VENV (Spark $SPARK_LINE)"
    python3 -m venv "$VENV"
  fi
  { cat "$ROOT/dev/requirements.txt"; echo "pyspark[connect]==$PYSPARK_VERSION"
    python3 "$ROOT/python/spark_sieve/_spark_lines.py" --requirements "$SPARK_LINE"; } > "$VENV/requirements.txt"
  want="$(sha256sum "$VENV/requirements.txt" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "installing dev/requirements.txt and pyspark $PYSPARK_VERSION into $VENV (first run downloads ~450 MB)"
    "$PY" -m pip install -q -r "$VENV/requirements.txt"
    echo "$want" > "$stamp"
  fi
  flock -u "$venv_lock"
}

# The jars of the line's pyspark release, which its spark-sieve jar compiles against: unpacked once from
# the release's source archive on PyPI into .cache/spark-<line>/jars (no virtualenv needed to build a jar).
line_jars() {
  local dir="$CACHE/spark-$SPARK_LINE" lock
  mkdir -p "$CACHE"
  exec {lock}>"$dir.lock"
  flock "$lock"
  if [ ! -f "$dir/jars/.complete" ]; then
    log "fetching pyspark $PYSPARK_VERSION's jars for Spark $SPARK_LINE (~400 MB, once)"
    rm -rf "$dir" && mkdir -p "$dir/download"
    # (without the build tracker of a pip that runs this one, building the wheel: two lines fetched at once
    # shared it and failed with "wheel ... is already being built")
    env -u PIP_BUILD_TRACKER python3 -m pip download -q --no-deps --no-binary :all: "pyspark==$PYSPARK_VERSION" \
        -d "$dir/download" &&
      tar -xzf "$dir"/download/pyspark-*.tar.gz -C "$dir/download" --wildcards '*/deps/jars/*' &&
      mv "$dir"/download/pyspark-*/deps/jars "$dir/jars" ||
      { log "fetching pyspark $PYSPARK_VERSION's jars failed"; rm -rf "$dir"; exit 1; }
    rm -rf "$dir/download"
    touch "$dir/jars/.complete"
  fi
  flock -u "$lock"
  echo "$dir/jars"
}

# Spark Connect's server jar for a line whose pyspark jars lack it (3.5; _spark_lines.py's CONNECT_SERVER),
# fetched once through Maven into .cache/spark-<line>-connect/; prints its path, or nothing for a line whose
# pyspark has it. Compiled against (dev/sbt), and the tests' local Connect server loads it (dev/test).
connect_server_jar() {
  local version dir="$CACHE/spark-$SPARK_LINE-connect" lock
  version="$(python3 "$ROOT/python/spark_sieve/_spark_lines.py" --connect-server "$SPARK_LINE")"
  [ -n "$version" ] || return 0
  local jar="$dir/spark-connect_$SCALA_BINARY-$version.jar"
  mkdir -p "$CACHE"
  exec {lock}>"$dir.lock"
  flock "$lock"
  if [ ! -f "$jar" ]; then
    log "fetching Spark Connect's server $version for Spark $SPARK_LINE through Maven (~14 MB, once)"
    mvn -q -B -Dmaven.repo.local="$CACHE/m2" dependency:copy \
      "-Dartifact=org.apache.spark:spark-connect_$SCALA_BINARY:$version" "-DoutputDirectory=$dir" >&2 ||
      { log "fetching Spark Connect's server $version failed"; exit 1; }
  fi
  flock -u "$lock"
  echo "$jar"
}

# Exports SIEVE_CONNECT_SERVER_JAR (connect_server_jar's path, or empty) for the line's builds, tests and demo.
export_connect_server_jar() {
  SIEVE_CONNECT_SERVER_JAR="$(connect_server_jar)"
  export SIEVE_CONNECT_SERVER_JAR
}

# The line's Delta Lake and Iceberg jars (_spark_lines.py's TABLE_FORMATS), for the tests of tables in those
# formats: fetched once through Maven into .cache/formats-<line>/; exports SIEVE_FORMAT_JARS, "FORMAT=JAR"
# pairs joined by commas (empty for a line without releases: those tests then skip, naming the line).
export_format_jars() {
  local dir="$CACHE/formats-$SPARK_LINE" lock name coordinate jar pairs=()
  mkdir -p "$CACHE"
  exec {lock}>"$dir.lock"
  flock "$lock"
  while read -r name coordinate; do
    [ -n "$name" ] || continue
    IFS=: read -r _ artifact version <<<"$coordinate"
    jar="$dir/$artifact-$version.jar"
    if [ ! -f "$jar" ]; then
      log "fetching $coordinate through Maven (once)"
      mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" dependency:copy "-Dartifact=$coordinate" \
        "-DoutputDirectory=$dir" >&2 ||
        { log "fetching $coordinate failed"; exit 1; }
    fi
    pairs+=("$name=$jar")
  done < <(python3 "$ROOT/python/spark_sieve/_spark_lines.py" --table-formats "$SPARK_LINE")
  flock -u "$lock"
  SIEVE_FORMAT_JARS="$(IFS=,; echo "${pairs[*]-}")"
  export SIEVE_FORMAT_JARS
}
