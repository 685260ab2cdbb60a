#!/usr/bin/env bash
# `make stress-expiry`: the expiry requirement, HotKV and Redis side by side. Starts a fresh
# hotkv-server and a fresh redis-server on free ports, one after the other, runs
# cmd/hotkv-stress against each, stops them and prints both reports. Exits non-zero when HotKV
# misses the requirement; Redis's result is for comparison only. KEYS sets the key count and
# TTL the keys' time to live (the default 1s is shorter than loading a million keys takes, so
# keys expire while others load; a TTL longer than the load makes them all expire together).
set -uo pipefail
cd "$(dirname "$0")/.."

KEYS=${KEYS:-1000000}
TTL=${TTL:-1s}
bash scripts/setup.sh >/dev/null || exit 2
go build -o bin/hotkv-server ./cmd/hotkv-server && go build -o bin/hotkv-stress ./cmd/hotkv-stress || exit 2

tmp=$(mktemp -d)
pid=""
stop() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=""
	fi
}
trap 'stop; rm -rf "$tmp"' EXIT

free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

# measure NAME PORT COMMAND...: starts a server, runs the stress tool on it, stops it.
measure() {
	local name=$1 port=$2
	shift 2
	"$@" >"$tmp/$name.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break
		sleep 0.1
	done
	echo "=== $name on port $port"
	local rc=0
	bin/hotkv-stress -addr "127.0.0.1:$port" -keys "$KEYS" -ttl "$TTL" | tee "$tmp/$name.report" || rc=$?
	stop
	echo
	return "$rc"
}

hport=$(free_port 17400)
hrc=0
measure HotKV "$hport" bin/hotkv-server --port "$hport" --bind 127.0.0.1 --dir "$tmp" || hrc=$?
rport=$(free_port $((hport + 1)))
rrc=0
measure Redis "$rport" redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" || rrc=$?

echo "=== side by side ($KEYS keys, TTL $TTL)"
for name in HotKV Redis; do
	echo "$name:"
	grep -E '^(load|expiry|result):|after loading' "$tmp/$name.report" 2>/dev/null | sed 's/^/  /'
done
echo "exit status: HotKV $hrc, Redis $rrc (0 pass, 1 requirement missed, 2 could not run)"
exit "$hrc"
