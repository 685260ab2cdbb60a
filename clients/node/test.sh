#!/usr/bin/env bash
# Builds and tests the Node.js client (@hotkv/client) against a real hotkv-server.
#   clients/node/test.sh            # npm ci, build (ESM + CJS), node --test
# HOTKV_SERVER_BIN names the server binary; without it bin/hotkv-server is built at the
# repository root first. Each test file starts its own server on a free loopback port and
# kills it when the file ends (also on failure).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if [ -z "${HOTKV_SERVER_BIN:-}" ]; then
  echo "== building hotkv-server"
  (cd "$root" && go build -o bin/hotkv-server ./cmd/hotkv-server)
  export HOTKV_SERVER_BIN="$root/bin/hotkv-server"
fi

cd "$here"
echo "== npm ci"
npm ci --no-audit --no-fund --prefer-offline --loglevel=error
echo "== build"
npm run --silent build
echo "== node --test"
npm test --silent
