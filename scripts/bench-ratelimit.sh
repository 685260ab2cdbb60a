#!/usr/bin/env bash
# Side-by-side rate-limit benchmark: HotKV's GCRA.LIMIT against Redis 7's plain SET (the issue's
# bar), with the same load generator (redis-benchmark), interleaved A B A B so drift in this
# noisy machine hits both; then bytes per rate-limit key at N keys (INFO used_memory delta) for
# HotKV GCRA.LIMIT keys and the equivalent Redis string keys with a TTL.
# Usage: scripts/bench-ratelimit.sh [rounds] [keys]   Prints a Markdown report on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
KEYS=${2:-1000000}
REQ=${REQ:-1000000}
command -v redis-server >/dev/null || bash scripts/setup.sh >&2
go build -o bin/hotkv-server ./cmd/hotkv-server
tmp=$(mktemp -d)
HK_PORT=$((20000 + RANDOM % 10000)); RD_PORT=$((HK_PORT + 1))
./bin/hotkv-server --port "$HK_PORT" --loglevel warning >"$tmp/hk.log" 2>&1 &
HK=$!
redis-server --port "$RD_PORT" --save '' --appendonly no --dir "$tmp" >"$tmp/rd.log" 2>&1 &
RD=$!
trap 'kill $HK $RD 2>/dev/null; rm -rf "$tmp"' EXIT
for p in "$HK_PORT" "$RD_PORT"; do
	for _ in $(seq 50); do redis-cli -p "$p" PING >/dev/null 2>&1 && break; sleep 0.1; done
done

rps() { # port, command...
	local port=$1; shift
	redis-benchmark -p "$port" -n "$REQ" -r 1000000 -c 50 -P 16 --threads 2 -q "$@" 2>/dev/null |
		tr '\r' '\n' | grep 'requests per second' | tail -1 | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "## GCRA.LIMIT throughput vs Redis SET"
echo
echo "redis-benchmark, $REQ requests per run, random keys over 1,000,000, 50 connections, pipeline 16, 2 client threads, $ROUNDS interleaved rounds, $(nproc) cores shared by client and servers."
echo
: >"$tmp/g"; : >"$tmp/s"; : >"$tmp/h"
for r in $(seq "$ROUNDS"); do
	rps "$HK_PORT" GCRA.LIMIT rl:__rand_int__ 60000 10 >>"$tmp/g"
	rps "$RD_PORT" SET rl:__rand_int__ 1700000006000000000 >>"$tmp/s"
	rps "$HK_PORT" SET rl:__rand_int__ 1700000006000000000 >>"$tmp/h"
done
g=$(median <"$tmp/g"); s=$(median <"$tmp/s"); h=$(median <"$tmp/h")
echo "| workload | median req/s | runs | ratio to Redis SET |"
echo "|---|---|---|---|"
printf '| HotKV GCRA.LIMIT | %.0f | %s | %.2f |\n' "$g" "$(paste -sd' ' "$tmp/g")" "$(echo "$g / $s" | bc -l)"
printf '| HotKV SET | %.0f | %s | %.2f |\n' "$h" "$(paste -sd' ' "$tmp/h")" "$(echo "$h / $s" | bc -l)"
printf '| Redis 7 SET | %.0f | %s | 1.00 |\n' "$s" "$(paste -sd' ' "$tmp/s")"
echo

used() { redis-cli -p "$1" INFO memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }
gen() { # kind: gcra | set
	awk -v n="$KEYS" -v kind="$1" 'BEGIN {
		for (i = 0; i < n; i++) {
			k = sprintf("rl:user:%08d", i)
			if (kind == "gcra") printf "*5\r\n$10\r\nGCRA.LIMIT\r\n$16\r\n%s\r\n$7\r\n3600000\r\n$2\r\n10\r\n$1\r\n1\r\n", k
			else printf "*5\r\n$3\r\nSET\r\n$16\r\n%s\r\n$19\r\n1700000360000000000\r\n$4\r\nPXAT\r\n$13\r\n4102444800000\r\n", k
		}
	}'
}
redis-cli -p "$HK_PORT" FLUSHALL SYNC >/dev/null; redis-cli -p "$RD_PORT" FLUSHALL SYNC >/dev/null
redis-cli -p "$HK_PORT" MEMORY PURGE >/dev/null 2>&1 || true
sleep 1
hk0=$(used "$HK_PORT"); rd0=$(used "$RD_PORT")
gen gcra | redis-cli -p "$HK_PORT" --pipe >/dev/null
gen set | redis-cli -p "$RD_PORT" --pipe >/dev/null
sleep 1
# MEMORY PURGE runs a full GC in HotKV, so both figures count live data only, as Redis's
# used_memory (exact allocator accounting) does.
redis-cli -p "$HK_PORT" MEMORY PURGE >/dev/null
hk1=$(used "$HK_PORT"); rd1=$(used "$RD_PORT")
echo "## Bytes per rate-limit key ($KEYS keys, 16-byte names, with expiry)"
echo
echo "| server | keys | used_memory delta / key |"
echo "|---|---|---|"
hkn=$(redis-cli -p "$HK_PORT" DBSIZE); rdn=$(redis-cli -p "$RD_PORT" DBSIZE)
printf '| HotKV (GCRA.LIMIT keys) | %s | %.1f |\n' "$hkn" "$(echo "($hk1 - $hk0) / $hkn" | bc -l)"
printf '| Redis 7 (SET key <19-digit int> PXAT) | %s | %.1f |\n' "$rdn" "$(echo "($rd1 - $rd0) / $rdn" | bc -l)"
echo
echo "HotKV's used_memory is the Go heap's object bytes, measured after MEMORY PURGE (a full GC); the in-process figure from \`go test -bench GCRAMemory -benchtime 1x ./internal/command/\` measures the same through the command path without the network."
