#!/usr/bin/env bash
# `make bench`: HotKV against Redis 7 side by side (cmd/hotkv-bench suite). Installs
# redis-server if missing (scripts/setup.sh), builds both binaries, runs every workload
# interleaved, and rewrites docs/benchmarks.md, docs/benchmarks/*.png and results.json.
# Extra arguments go to `hotkv-bench suite` (e.g. -rounds 5, -only set,gcra, -mem "").
# Takes about 12 minutes on a 2-core machine; nothing else should run meanwhile.
#
# `make bench-raft` (`scripts/bench.sh raft [args]`): the replicated benchmark
# (`hotkv-bench raft`, a 3-node group, standalone HotKV and Redis with appendfsync always, and
# leader kills); it updates the "Replicated (Raft)" section of docs/benchmarks.md and keeps the
# rest. About 2 minutes.
#
# `make bench-cluster` (`scripts/bench.sh cluster [args]`): the sharded benchmark
# (`hotkv-bench cluster`: allowed decisions/s on clusters of 1, 2 and 3 shards, and the time
# CLUSTERX MIGRATE takes to move a range of 1M keys); it updates the "Sharded cluster" section
# of docs/benchmarks.md and keeps the rest. About 3 minutes; on a machine with few cores the
# report says the scaling curve cannot show multi-core scaling.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-server >/dev/null || bash scripts/setup.sh
go build -o bin/hotkv-server ./cmd/hotkv-server
go build -o bin/hotkv-bench ./cmd/hotkv-bench
if [ "${1:-}" = raft ]; then
	shift
	exec ./bin/hotkv-bench raft -hotkv bin/hotkv-server -redis-server "$(command -v redis-server)" -out docs "$@"
fi
if [ "${1:-}" = cluster ]; then
	shift
	exec ./bin/hotkv-bench cluster -hotkv bin/hotkv-server -out docs "$@"
fi
if [ "${1:-}" = rls ]; then
	shift
	exec ./bin/hotkv-bench rls -hotkv bin/hotkv-server -out docs "$@"
fi
exec ./bin/hotkv-bench suite -hotkv bin/hotkv-server -redis-server "$(command -v redis-server)" -out docs "$@"
