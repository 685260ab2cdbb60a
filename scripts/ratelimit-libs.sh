#!/usr/bin/env bash
# `make ratelimit-libs`: the Redis test suites of real rate-limit libraries, run unchanged
# against Redis 7 and against HotKV, one after the other on the same port; HotKV must pass
# every test that Redis passes (as with Redis's own TCL suite, docs/compatibility.md: a
# library's suite can fail on Redis too, e.g. redis_rate v10.0.1's exact-remaining checks,
# which its float arithmetic on seconds since 2017 no longer meets in 2026).
#
# The libraries come from their registries (the Go module proxy) into .cache/ratelimit-libs/
# (git-ignored), never into the repo:
#   - github.com/go-redis/redis_rate/v10 (GCRA in a Lua script; its tests dial :6379)
#   - github.com/ulule/limiter/v3, its Redis store (a Lua script; REDIS_URI)
# rate-limiter-flexible (npm) ships no tests in its registry package (checked: 2.4, 3.0, 4.0, 5.0, 11.4),
# and its repository cannot be fetched from here, so its suite cannot run; instead
# scripts/ratelimit-libs/flexible.js drives its RateLimiterRedis (installed from npm, with
# ioredis) through consume, penalty, reward, get, set, block, delete and blockDuration, and
# HotKV must answer every step as Redis does.
#
# Both servers serve on 127.0.0.1:6379, which redis_rate's tests hard-code, so that port must be
# free. Exit status: 0 when HotKV passed everything Redis passed, 1 when not, 2 when the harness
# broke.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/.cache/ratelimit-libs"
PORT=6379
SUITES=(
    "github.com/go-redis/redis_rate/v10@v10.0.1"
    "github.com/ulule/limiter/v3/drivers/store/redis@v3.11.2"
)

die() { echo "ratelimit-libs: $*" >&2; exit 2; }
ping() { redis-cli -p "$PORT" PING >/dev/null 2>&1; }

ping && die "127.0.0.1:$PORT is in use; redis_rate's tests dial it, so each server must serve there"
command -v redis-server >/dev/null || die "redis-server is missing (scripts/setup.sh installs it)"
mkdir -p "$WORK/go" "$WORK/data"
(cd "$ROOT" && go build -o bin/hotkv-server ./cmd/hotkv-server)
cd "$WORK/go"
[ -f go.mod ] || go mod init hotkv.local/ratelimit-libs >/dev/null 2>&1
# -t brings the libraries' test dependencies too.
go get -t "${SUITES[@]}" >/dev/null 2>&1 || go get -t "${SUITES[@]}" || die "go get failed"
mkdir -p "$WORK/node"
(cd "$WORK/node" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund rate-limiter-flexible@11.4.0 ioredis@5 >/dev/null) || die "npm install failed"

pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; true; }
trap stop EXIT

# run SERVER: starts it on PORT, runs every suite verbosely into $WORK/SERVER.log, stops it.
run() {
    case "$1" in
    redis) redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK/data" \
               --logfile "$WORK/redis-server.log" & ;;
    hotkv) "$ROOT/bin/hotkv-server" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
               --dir "$WORK/data" --logfile "$WORK/hotkv-server.log" & ;;
    esac
    pid=$!
    for _ in $(seq 100); do ping && break; sleep 0.1; done
    ping || die "$1 did not start (see $WORK/$1-server.log)"
    : >"$WORK/$1.log"
    for s in "${SUITES[@]}"; do
        REDIS_URI="redis://127.0.0.1:$PORT/0" go test -count=1 -v "${s%@*}" >>"$WORK/$1.log" 2>&1 || true
    done
    PORT=$PORT NODE_PATH="$WORK/node/node_modules" node "$ROOT/scripts/ratelimit-libs/flexible.js" \
        >"$WORK/$1-flexible.txt" 2>&1 || true
    stop
}
run redis
run hotkv

failed=0
echo "| test | Redis 7 | HotKV |"
echo "| --- | --- | --- |"
while read -r line; do
    name=$(sed -E 's/^\s*--- (PASS|FAIL|SKIP): ([^ ]+).*/\2/' <<<"$line")
    r=$(grep -qE "^\s*--- PASS: $name " "$WORK/redis.log" && echo pass || echo fail)
    h=$(grep -qE "^\s*--- PASS: $name " "$WORK/hotkv.log" && echo pass || echo fail)
    echo "| $name | $r | $h |"
    if [ "$r" = pass ] && [ "$h" != pass ]; then failed=1; fi
done < <(grep -hE '^\s*--- (PASS|FAIL|SKIP): ' "$WORK/redis.log" "$WORK/hotkv.log" | sed -E 's/ \([0-9.]+s\)$//' | sort -u -k3,3)
grep -E '^(ok|FAIL)\s' "$WORK/redis.log" | sed 's/^/redis: /'
grep -E '^(ok|FAIL)\s' "$WORK/hotkv.log" | sed 's/^/hotkv: /'
grep -q '^consume 0: points=1 ' "$WORK/redis-flexible.txt" ||
    die "rate-limiter-flexible did not run against Redis: $(head -3 "$WORK/redis-flexible.txt")"
if diff "$WORK/redis-flexible.txt" "$WORK/hotkv-flexible.txt" >/dev/null; then
    echo "rate-limiter-flexible: $(wc -l <"$WORK/redis-flexible.txt") steps, HotKV answers every one as Redis"
else
    echo "rate-limiter-flexible: HotKV differs from Redis:"
    diff "$WORK/redis-flexible.txt" "$WORK/hotkv-flexible.txt" || true
    failed=1
fi
if [ "$failed" -ne 0 ]; then
    echo "ratelimit-libs: HotKV failed tests that Redis passes (logs: $WORK/{redis,hotkv}.log)"
    exit 1
fi
echo "ratelimit-libs: HotKV passes every test Redis passes"
