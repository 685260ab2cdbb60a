#!/usr/bin/env bash
# Tests of the Python client (clients/python): installs its dependencies from PyPI into a venv
# (clients/python/.venv, reused while pyproject.toml is unchanged), builds bin/hotkv-server
# unless HOTKV_SERVER_BIN names a binary, type-checks the package with mypy --strict and runs
# pytest, which starts and stops its own server. Exits non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
stamp=.venv/.deps-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
    touch "$stamp"
fi

if [ -z "${HOTKV_SERVER_BIN:-}" ]; then
    (cd "$root" && go build -o bin/hotkv-server ./cmd/hotkv-server)
    export HOTKV_SERVER_BIN="$root/bin/hotkv-server"
fi

echo "== mypy --strict (configured in pyproject.toml)"
.venv/bin/mypy src/hotkv tests/typing/usage.py
echo "== pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
