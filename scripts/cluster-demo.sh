#!/usr/bin/env bash
# cluster-demo: three HotKV nodes of one Raft group on loopback (docs/replication.md).
#   scripts/cluster-demo.sh          build, start n1..n3, bootstrap n1, add n2 and n3
#   scripts/cluster-demo.sh stop     stop them (SHUTDOWN NOSAVE) and keep their data
#   scripts/cluster-demo.sh clean    stop them and delete their data
# BASE (default 7000) picks the ports: clients BASE+1..3, Raft BASE+101..103.
# DEMO_DIR (default ./cluster-demo) holds each node's dir and log.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-7000}
DEMO_DIR=${DEMO_DIR:-./cluster-demo}
CLI=${CLI:-redis-cli}

stop() {
	for i in 1 2 3; do
		"$CLI" -p $((BASE + i)) shutdown nosave >/dev/null 2>&1 || true
	done
	echo "stopped the demo nodes on ports $((BASE + 1))-$((BASE + 3))"
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

go build -o bin/hotkv-server ./cmd/hotkv-server
for i in 1 2 3; do
	dir="$DEMO_DIR/n$i"
	mkdir -p "$dir"
	extra=()
	if [ "$i" = 1 ]; then extra=(--raft-bootstrap yes); fi
	./bin/hotkv-server --port $((BASE + i)) --bind 127.0.0.1 --dir "$dir" \
		--raft-port $((BASE + 100 + i)) --raft-node-id "n$i" "${extra[@]}" \
		>"$dir/hotkv.log" 2>&1 &
done

wait_for() { # port, what
	for _ in $(seq 1 100); do
		if "$CLI" -p "$1" raft status 2>/dev/null | grep -qx "$2"; then return 0; fi
		sleep 0.1
	done
	echo "node on port $1 never reported $2; see $DEMO_DIR/*/hotkv.log" >&2
	exit 1
}
wait_for $((BASE + 1)) leader
for i in 2 3; do
	"$CLI" -p $((BASE + 1)) raft add "n$i" "127.0.0.1:$((BASE + 100 + i))" >/dev/null
done
sleep 1
"$CLI" -p $((BASE + 1)) raft status

cat <<MSG

Three nodes are running (data in $DEMO_DIR):
  n1 leader    redis-cli -p $((BASE + 1))        (Raft port $((BASE + 101)))
  n2 follower  redis-cli -p $((BASE + 2))        (Raft port $((BASE + 102)))
  n3 follower  redis-cli -p $((BASE + 3))        (Raft port $((BASE + 103)))
Write on the leader, or use redis-cli -c on any node: followers answer -MOVED to the leader.
  redis-cli -c -p $((BASE + 2)) gcra.limit user:42 60000 10
  redis-cli -p $((BASE + 1)) raft transfer      # hand leadership to another node
  redis-cli -p $((BASE + 1)) info replication
Stop:    make cluster-demo-stop    (or: $0 stop; '$0 clean' also deletes the data)
MSG
