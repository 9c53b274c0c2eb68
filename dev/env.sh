# Sourced by the dev/ scripts: paths, and a virtualenv under .cache/venv made idempotently.
# Everything a new machine needs comes from PyPI (pip) and Maven Central (Maven, sbt).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
VENV="$CACHE/venv"
PY="$VENV/bin/python"
export PIP_CACHE_DIR="$CACHE/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { echo "[$(basename "$0")] $*" >&2; }

# (Re)installs dev/requirements.txt into the venv when the file changed since the last install.
ensure_venv() {
  local stamp="$VENV/.requirements.sha" want
  want="$(sha256sum "$ROOT/dev/requirements.txt" | cut -d' ' -f1)"
  if [ ! -x "$PY" ]; then
    log "creating virtualenv $VENV"
    python3 -m venv "$VENV"
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "installing dev/requirements.txt into $VENV (first run downloads pyspark, ~450 MB)"
    "$PY" -m pip install -q -r "$ROOT/dev/requirements.txt"
    echo "$want" > "$stamp"
  fi
}

# pyspark's jars/ folder: the Spark and Scala the jar is compiled against and runs with.
pyspark_jars() {
  "$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))'
}
