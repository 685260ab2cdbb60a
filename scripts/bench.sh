#!/usr/bin/env bash
# `make bench`: HotKV against Redis 7 side by side (cmd/hotkv-bench suite). Installs
# redis-server if missing (scripts/setup.sh), builds both binaries, runs every workload
# interleaved, and rewrites docs/benchmarks.md, docs/benchmarks/*.png and results.json.
# Extra arguments go to `hotkv-bench suite` (e.g. -rounds 5, -only set,gcra, -mem "").
# Takes about 12 minutes on a 2-core machine; nothing else should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-server >/dev/null || bash scripts/setup.sh
go build -o bin/hotkv-server ./cmd/hotkv-server
go build -o bin/hotkv-bench ./cmd/hotkv-bench
exec ./bin/hotkv-bench suite -hotkv bin/hotkv-server -redis-server "$(command -v redis-server)" -out docs "$@"
