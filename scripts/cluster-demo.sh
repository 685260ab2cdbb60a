#!/usr/bin/env bash
# cluster-demo: a sharded HotKV cluster on loopback (docs/cluster.md): SHARDS shards (default
# 3) of NODES nodes each (default 3), every shard a Raft group, the slot map in the meta group.
#   scripts/cluster-demo.sh          build, start the nodes, form the groups, join the cluster,
#                                    spread the 16384 slots evenly over the shards
#   scripts/cluster-demo.sh stop     stop them (SHUTDOWN NOSAVE) and keep their data
#   scripts/cluster-demo.sh clean    stop them and delete their data
# Node i (1-based) is n<i> of shard s<(i-1)/NODES+1>; its client port is BASE+i, its Raft
# port BASE+100+i and its meta group port BASE+10100+i (BASE defaults to 7000).
# SHARDS=1 NODES=3 is one replicated group. DEMO_DIR (default ./cluster-demo) holds each
# node's dir and log. HOTKV_SERVER_BIN names a server binary to run instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-7000}
SHARDS=${SHARDS:-3}
NODES=${NODES:-3}
DEMO_DIR=${DEMO_DIR:-./cluster-demo}
CLI=${CLI:-redis-cli}
TOTAL=$((SHARDS * NODES))

stop() {
	for i in $(seq 1 "$TOTAL"); do
		"$CLI" -p $((BASE + i)) shutdown nosave >/dev/null 2>&1 || true
	done
	echo "stopped the demo nodes on ports $((BASE + 1))-$((BASE + TOTAL))"
}

case "${1:-start}" in
stop)
	stop
	exit 0
	;;
clean)
	stop
	rm -rf "$DEMO_DIR"
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 [start|stop|clean]" >&2
	exit 2
	;;
esac

BIN=${HOTKV_SERVER_BIN:-}
if [ -z "$BIN" ]; then
	go build -o bin/hotkv-server ./cmd/hotkv-server
	BIN=./bin/hotkv-server
fi
for i in $(seq 1 "$TOTAL"); do
	dir="$DEMO_DIR/n$i"
	shard=$(((i - 1) / NODES + 1))
	mkdir -p "$dir"
	extra=()
	if [ $(((i - 1) % NODES)) = 0 ]; then extra+=(--raft-bootstrap yes); fi
	if [ "$i" = 1 ]; then extra+=(--cluster-meta-bootstrap yes); fi
	"$BIN" --port $((BASE + i)) --bind 127.0.0.1 --dir "$dir" \
		--raft-port $((BASE + 100 + i)) --raft-node-id "n$i" \
		--cluster-enabled yes --cluster-shard-id "s$shard" "${extra[@]}" \
		>"$dir/hotkv.log" 2>&1 &
done

wait_for() { # port, command, expected line
	for _ in $(seq 1 150); do
		if "$CLI" -p "$1" $2 2>/dev/null | tr -d '\r' | grep -qx "$3"; then return 0; fi
		sleep 0.1
	done
	echo "node on port $1 never reported $3 to '$2'; see $DEMO_DIR/*/hotkv.log" >&2
	exit 1
}
# Each shard's first node leads its new group; the others join it.
for s in $(seq 1 "$SHARDS"); do
	first=$(((s - 1) * NODES + 1))
	wait_for $((BASE + first)) "raft status" leader
	for i in $(seq $((first + 1)) $((first + NODES - 1))); do
		"$CLI" -p $((BASE + first)) raft add "n$i" "127.0.0.1:$((BASE + 100 + i))" >/dev/null
	done
done
# n1 started the cluster (its meta group); every other node joins through it. The first
# nodes to join vote in the meta group (cluster-meta-voters, 3): one per shard, the first
# node of each shard before the second ones, so that no shard's loss takes the map with it.
wait_for $((BASE + 1)) "clusterx status" leader
for k in $(seq 0 $((NODES - 1))); do
	for s in $(seq 1 "$SHARDS"); do
		i=$(((s - 1) * NODES + 1 + k))
		if [ "$i" != 1 ]; then
			"$CLI" -p $((BASE + i)) clusterx join 127.0.0.1 $((BASE + 1)) >/dev/null
		fi
	done
done
# The slots, evenly: shard s gets [(s-1)*16384/SHARDS, s*16384/SHARDS - 1].
for s in $(seq 1 "$SHARDS"); do
	"$CLI" -p $((BASE + 1)) clusterx assign "s$s" $(((s - 1) * 16384 / SHARDS)) $((s * 16384 / SHARDS - 1)) >/dev/null
done
for i in $(seq 1 "$TOTAL"); do
	wait_for $((BASE + i)) "cluster info" cluster_state:ok
done
"$CLI" -p $((BASE + 1)) cluster nodes

cat <<MSG

$TOTAL nodes in $SHARDS shards are running (data in $DEMO_DIR), client ports $((BASE + 1))-$((BASE + TOTAL)).
Any cluster client works; with redis-cli, -c follows the -MOVED redirects:
  redis-cli -c -p $((BASE + 1)) gcra.limit user:42 60000 10
  redis-cli -c -p $((BASE + 1)) set '{user:42}:name' ada
  redis-cli -p $((BASE + 1)) cluster slots
  redis-cli -p $((BASE + 1)) clusterx map        # the slot map (JSON)
  redis-cli -p $((BASE + 1)) raft transfer       # hand shard s1's leadership to another node
Stop:    make cluster-demo-stop    (or: $0 stop; '$0 clean' also deletes the data)
MSG
