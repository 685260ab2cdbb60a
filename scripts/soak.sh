#!/usr/bin/env bash
# `make soak`: the security issue's soak program (cmd/hotkv-soak) against a fresh HotKV built
# from the working tree, on a free loopback port, with maxclients raised for the connection
# count. Arguments go to hotkv-soak (-conns, -slow, -flood, -duration, -maxmemory, -allowance).
# Exit status: hotkv-soak's (0 pass, 1 requirement failed, 2 could not run).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
go build -o bin/hotkv-server ./cmd/hotkv-server
go build -o bin/hotkv-soak ./cmd/hotkv-soak
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DIR=$(mktemp -d)
bin/hotkv-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
    --maxclients 20000 --logfile "$DIR/hotkv.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done
bin/hotkv-soak -addr "127.0.0.1:$PORT" "$@"
