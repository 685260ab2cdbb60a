#!/usr/bin/env bash
# Runs every check CI runs (`make test`, `.ci/run`): setup, gofmt, go vet, the whole Go suite
# under the race detector, bounded fuzz runs (the RESP reader, the snapshot decoder, the
# append-only log reader, the DUMP payload decoder, and FuzzCommands: hostile command lines
# against a live server), the Python, Node.js and Java clients' own test runners
# (clients/*/test.sh), the redis-cli smoke test, and the Redis test suites of two rate-limit
# libraries against Redis 7 and HotKV (scripts/ratelimit-libs.sh: HotKV must pass what Redis
# passes), and Redis's TCL units for auth, ACL and limits (redis_sec below).
# Every step runs even after a failure; the script prints each step's summary and exits
# non-zero if any step failed. FUZZTIME (default 400000x, the RESP reader), SNAPSHOT_FUZZTIME
# (default 60000x, each of the decoders) and COMMAND_FUZZTIME (default 5000x) set the fuzzing
# budgets. They are execution counts, not durations: with a duration, Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" failure when the time runs out
# (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race. On this 2-core
# machine the defaults take 5 to 15 s each.
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-400000x}
SNAPSHOT_FUZZTIME=${SNAPSHOT_FUZZTIME:-60000x}
COMMAND_FUZZTIME=${COMMAND_FUZZTIME:-5000x}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
results=()
failed=0

# step NAME COMMAND...: runs one check, records PASS/FAIL and its duration.
step() {
	local name=$1 start=$SECONDS rc=0
	shift
	echo
	echo "=== $name"
	"$@" || rc=$?
	local verdict=PASS
	if [ "$rc" -ne 0 ]; then
		verdict="FAIL (exit $rc)"
		failed=1
	fi
	results+=("$(printf '%-12s %5ss  %s' "$name" $((SECONDS - start)) "$verdict")")
}

gofmt_check() {
	local files
	files=$(gofmt -l .)
	[ -z "$files" ] && return 0
	echo "these files need gofmt -w:"
	echo "$files"
	return 1
}

go_tests() {
	go test -race -count=1 ./... 2>&1 | tee "$log/go-test"
	local rc=${PIPESTATUS[0]}
	echo "--- go test summary"
	grep -E '^(ok|FAIL|---|panic:|\?)' "$log/go-test" | grep -v 'no test files' || true
	return "$rc"
}

# The Go client (clients/go) is its own module, so the root ./... does not reach it; its tests
# build and start a real hotkv-server.
go_client() {
	(cd clients/go && go vet ./... && go test -race -count=1 ./...) 2>&1 | tee "$log/go-client"
	local rc=${PIPESTATUS[0]}
	echo "--- go client summary"
	grep -E '^(ok|FAIL|---|panic:|\?)' "$log/go-client" | grep -v 'no test files' || true
	return "$rc"
}

# fuzz TARGET PACKAGE BUDGET: one bounded fuzz run. -fuzzminimizetime bounds the minimizing
# of each new input, which can otherwise stall a short run for a minute.
fuzz() {
	local out="$log/fuzz-$1"
	go test -run='^$' -fuzz="^$1\$" -fuzztime="$3" -fuzzminimizetime=2000x "$2" 2>&1 |
		tee "$out" | grep -vE '^fuzz: elapsed: [0-9]+s,'
	local rc=${PIPESTATUS[0]}
	echo "--- fuzz summary: $(grep -E '^fuzz: elapsed' "$out" | tail -n 1)"
	return "$rc"
}

smoke() {
	go build -o bin/hotkv-server ./cmd/hotkv-server && bash scripts/smoke.sh
}

# Redis's own TCL units for authentication, ACL and client limits (SEC_UNITS of
# scripts/redis-tests.sh, less querybuf, which checks Redis's 16 KB read size (HotKV reads
# 4 KB: internal/resp/reader.go), and maxmemory, whose tests assume Redis's allocator accounting:
# docs/compatibility.md), against Redis 7 and HotKV side by side: HotKV must pass at least
# 95% of what Redis passes in each. The report goes to a temporary file: docs/compatibility.md
# is rewritten only by `make redis-tests`.
redis_sec() {
	REDIS_TESTS_RESULTS="$log/redis-tests" scripts/redis-tests.sh --server both --check 95 \
		--out "$log/redis-sec.md" auth acl acl-v2 limits
}

step setup bash scripts/setup.sh
if [ "$failed" -ne 0 ]; then
	echo "setup failed; not running the tests"
	exit 1
fi
# setup installed redis-server and redis-cli, so the tests that use them must not skip.
export HOTKV_REQUIRE_REDIS=1

step gofmt gofmt_check
step vet go vet ./...
step go-test go_tests
step go-client go_client
step client-py bash clients/python/test.sh
step client-node bash clients/node/test.sh
step client-java bash clients/java/test.sh
step fuzz fuzz FuzzReader ./internal/resp/ "$FUZZTIME"
step fuzz-snap fuzz FuzzDecode ./internal/persist/ "$SNAPSHOT_FUZZTIME"
step fuzz-log fuzz FuzzLogReader ./internal/persist/ "$SNAPSHOT_FUZZTIME"
step fuzz-dump fuzz FuzzRestore ./internal/rdb/ "$SNAPSHOT_FUZZTIME"
step fuzz-cmds fuzz FuzzCommands ./tests/ "$COMMAND_FUZZTIME"
step smoke smoke
step rl-libs bash scripts/ratelimit-libs.sh
step redis-sec redis_sec

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
	echo "FAIL"
	exit 1
fi
echo "PASS"
