#!/usr/bin/env bash
# `make redis-tests`: Redis's own TCL test suite as the yardstick for HotKV's data types and
# its server features (scripting and the other units of TX_UNITS, introspection in OPS_UNITS,
# security and limits in SEC_UNITS).
#
# Fetches the suite once from Debian's `redis` source package (apt-get source redis, with a
# deb-src entry) into .cache/redis-src/ (git-ignored, never committed), starts HotKV (built
# from this working tree) and Debian's redis-server on free loopback ports, runs each chosen
# unit in external mode with the same runtest flags against both (or, for the units of
# SPAWN_UNITS, lets runtest start each server itself, see below), and writes per-unit pass
# counts to docs/compatibility.md (everything from a "## Notes" heading on is hand-written
# and kept on rewrite). The table also goes to stdout.
#
# Usage: scripts/redis-tests.sh [options] [unit ...]
#   unit                 type/string, unit/type/string or a bare name (string, expire);
#                        default: every unit for the data types (DEFAULT_UNITS), then
#                        every unit of CORE_UNITS, TX_UNITS, OPS_UNITS, then SEC_UNITS
#   --server S           hotkv, redis or both (default both). With one server, the other's
#                        numbers come from its last run's logs in the cache, when there are any.
#   --check PCT          exit 1 when a unit's HotKV pass rate (of Redis's passes) is below PCT
#   --unit-timeout SECS  wall-clock limit for one unit on one server (default 300)
#   --test-timeout SECS  runtest --timeout: no progress for this long ends the unit (default 120)
#   --out FILE           write the report here instead of docs/compatibility.md
#   --tolerate-function-flush
#                        diagnostic only, not the yardstick: run from a copy of the suite whose
#                        external-mode setup ignores an error from FUNCTION FLUSH (see below)
#
# Environment: REDIS_TESTS_RESULTS is where the per-server logs go (default
# .cache/redis-src/results). DENY_TAGS replaces the tags denied to both servers (diagnostics only: the
# yardstick is the default below).
#
# Exit status: 0 when the measurement completed (test failures included: it measures), 1 when
# --check found a unit below PCT, 2 when the harness itself broke (fetch, build, server start).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="$ROOT/.cache/redis-src"
# REDIS_TESTS_RESULTS moves the per-server logs elsewhere, so that two runs at once (two
# worktrees sharing one cache) do not overwrite each other's logs.
RESULTS="${REDIS_TESTS_RESULTS:-$CACHE/results}"

# The units for strings, hashes, lists, sets, sorted sets, streams, HyperLogLog, geo, keyspace,
# expiry, bit operations, SORT and DUMP/RESTORE/MIGRATE (dump, whose MIGRATE tests need a
# second server: it is one of SPAWN_UNITS). A unit missing from the fetched suite is reported
# as such.
DEFAULT_UNITS=(type/string type/incr type/hash type/list type/list-2 type/list-3 type/set
    type/zset type/stream type/stream-cgroups hyperloglog geo keyspace expire bitops bitfield scan
    sort dump)
# The server core's units: the protocol and its limits, QUIT, INFO's arguments, CLIENT PAUSE,
# and other.tcl's mix (SELECT, PIPELINING, APPEND fuzzing, RESET...). lazyfree is left out: it
# measures Redis's lazy-free thread (lazyfreed_objects, memory falling right after UNLINK),
# which HotKV does not have (docs/compatibility.md).
CORE_UNITS=(protocol quit info-command pause other)
# The units for transactions, pub/sub, client-side caching and Lua scripting (the issue that
# brought them). They run by default too, after DEFAULT_UNITS, so that one `make redis-tests`
# measures everything HotKV claims; name units to run fewer. pubsubshard's tests are all tagged
# external:skip (they need a server of their own), so in external mode it counts 0 of 0 on
# both servers; it is listed so that the report says so.
TX_UNITS=(multi pubsub pubsubshard tracking scripting functions)
# The units for SLOWLOG, LATENCY, MONITOR, CLIENT LIST, INFO and CONFIG (the Operations
# issue), run by default after TX_UNITS, in runtest's own mode (SPAWN_UNITS) since many of
# their tests start servers with their own config. What they do not pass is listed in
# docs/compatibility.md: mostly Redis directives HotKV does not have (replication's,
# maxmemory-clients, proc-title-template, shutdown-on-sig*) and latency-monitor's
# expire-cycle event, which HotKV's expiry does not take long enough to raise.
OPS_UNITS=(slowlog latency-monitor introspection introspection-2 info)
# The units for authentication, ACL, client limits, the query buffer and maxmemory (the
# security and limits issue). Their tests are tagged external:skip, because they restart
# servers or start them with their own config, so they are units of SPAWN_UNITS.
SEC_UNITS=(auth acl acl-v2 limits querybuf maxmemory)
# Units run in runtest's own mode instead of external mode: runtest starts every server the
# unit asks for from src/redis-server, with tests/assets/default.conf plus the unit's
# overrides. Each server gets a copy of the suite (.cache/redis-src/suite-<server>) whose
# src/redis-server is, for Redis, Debian's redis-server and, for HotKV,
# scripts/redis-tests/hotkv-as-redis-server, which drops the few Redis-only directives of the
# config (see that script) and runs bin/hotkv-server. Tests then need no external:skip
# exemption, and the same flags (less --host/--port/--singledb) apply to both servers.
SPAWN_UNITS=(auth acl acl-v2 limits querybuf maxmemory dump pubsubshard slowlog latency-monitor introspection
    introspection-2 info)

# Tags denied for both servers. needs:debug (the issue's flag): DEBUG subcommands that poke at
# Redis internals (DEBUG RELOAD, OBJECT internals, quicklist packing). needs:repl: tests that
# attach to the replication stream with SYNC to check propagation; HotKV has no replication,
# and that is no data-type behaviour. needs:pfdebug: PFDEBUG dumps Redis's internal HLL
# sparse/dense registers, the same kind of encoding check that --ignore-encoding turns off.
# masterauth: auth's one replication test (a replica authenticating to its master with
# REPLICAOF and masterauth): Redis's replication, which HotKV replaces with Raft, like needs:repl.
DENY_TAGS="${DENY_TAGS:--needs:debug -needs:repl -needs:pfdebug -masterauth}"

SERVERS=both
CHECK_PCT=""
UNIT_TIMEOUT=300
TEST_TIMEOUT=120
OUT="$ROOT/docs/compatibility.md"
TOLERATE_FF=0
UNITS=()

die() { echo "redis-tests: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
    --server) SERVERS="${2:?--server needs hotkv, redis or both}"; shift 2 ;;
    --check) CHECK_PCT="${2:?--check needs a percentage}"; shift 2 ;;
    --unit-timeout) UNIT_TIMEOUT="${2:?}"; shift 2 ;;
    --test-timeout) TEST_TIMEOUT="${2:?}"; shift 2 ;;
    --out) OUT="${2:?}"; shift 2 ;;
    --tolerate-function-flush) TOLERATE_FF=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --*) die "unknown option $1 (see --help)" ;;
    *) UNITS+=("$1"); shift ;;
    esac
done
case "$SERVERS" in hotkv | redis | both) ;; *) die "--server must be hotkv, redis or both" ;; esac
if [ -n "$CHECK_PCT" ] && ! [[ "$CHECK_PCT" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    die "--check needs a number, got '$CHECK_PCT'"
fi
[ ${#UNITS[@]} -gt 0 ] || UNITS=("${DEFAULT_UNITS[@]}" "${CORE_UNITS[@]}" "${TX_UNITS[@]}" "${OPS_UNITS[@]}" "${SEC_UNITS[@]}")
RUN_HOTKV=0; RUN_REDIS=0
[ "$SERVERS" = redis ] || RUN_HOTKV=1
[ "$SERVERS" = hotkv ] || RUN_REDIS=1

# ---------------------------------------------------------------------------------------------
# Fetching the suite

need_root() {
    [ "$(id -u)" -eq 0 ] || die "$1 needs root (apt-get); run as root, or install it by hand"
}

tclsh_present() { command -v tclsh8.6 >/dev/null || command -v tclsh8.5 >/dev/null || command -v tclsh8.7 >/dev/null; }

# Debian's deb822 sources as deb-src: the same URIs, suites, components and keyring, in a file
# of our own so that the system's file stays untouched. Falls back to the one-line
# sources.list format on machines that still use it. Third-party sources are left out: they
# may have no source indexes, and then apt-get update would fail.
write_deb_src() {
    local debian=/etc/apt/sources.list.d/debian.sources
    if [ -f "$debian" ]; then
        sed -e 's/^Types:.*/Types: deb-src/' "$debian" >/etc/apt/sources.list.d/hotkv-deb-src.sources
    elif [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/hotkv-deb-src.list
    else
        die "no Debian apt source found (neither $debian nor deb lines in /etc/apt/sources.list)"
    fi
}

fetch_suite() {
    need_root "fetching the Redis test suite"
    mkdir -p "$CACHE"
    if ! apt-cache showsrc redis 2>/dev/null | grep -q '^Package: redis$'; then
        write_deb_src
    fi
    apt-get update -qq || die "apt-get update failed"
    if ! command -v dpkg-source >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev >/dev/null ||
            die "could not install dpkg-dev (apt-get source needs it)"
    fi
    # Download and unpack into a scratch folder, then move into place, so that an interrupted
    # fetch never leaves a half tree that a later run would take for the cache.
    local tmp
    tmp="$(mktemp -d "$CACHE/fetch.XXXXXX")"
    if ! (cd "$tmp" && apt-get source -qq redis) >"$tmp/apt-source.log" 2>&1; then
        cat "$tmp/apt-source.log" >&2
        rm -rf "$tmp"
        die "apt-get source redis failed: is there a deb-src entry for Debian's mirror? (see above)"
    fi
    local dir dsc
    dir="$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'redis-*' | head -n1)"
    dsc="$(find "$tmp" -maxdepth 1 -name 'redis_*.dsc' | head -n1)"
    if [ -z "$dir" ] || [ ! -f "$dir/tests/test_helper.tcl" ]; then
        rm -rf "$tmp"
        die "apt-get source redis gave no test suite"
    fi
    sed -n 's/^Version: //p' "$dsc" >"$CACHE/VERSION"
    rm -rf "$CACHE/src"
    mv "$dir" "$CACHE/src"
    rm -rf "$tmp"
}

if [ ! -f "$CACHE/src/tests/test_helper.tcl" ] || [ ! -s "$CACHE/VERSION" ]; then fetch_suite; fi
SRC="$CACHE/src"
REDIS_SRC_VERSION="$(cat "$CACHE/VERSION")"

if ! tclsh_present; then
    need_root "installing Tcl (the suite's runtest needs tclsh 8.5+)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcl >/dev/null || die "could not install tcl"
fi

# Diagnostic copy: runtest's external mode sends FUNCTION FLUSH before every start_server
# block, outside any test, so a server without FUNCTION aborts every unit before its first
# test. The copy wraps that one call in catch; nothing else changes. Only with
# --tolerate-function-flush, and the report says so: it is not the yardstick.
RUN_SRC="$SRC"
if [ "$TOLERATE_FF" = 1 ]; then
    RUN_SRC="$CACHE/tolerant"
    if [ ! -f "$RUN_SRC/tests/support/server.tcl" ]; then
        rm -rf "$RUN_SRC" "$RUN_SRC.tmp"
        mkdir -p "$RUN_SRC.tmp"
        cp -a "$SRC/runtest" "$SRC/tests" "$RUN_SRC.tmp/"
        sed -i 's/^\( *\)r function flush$/\1catch {r function flush}/' "$RUN_SRC.tmp/tests/support/server.tcl"
        grep -q 'catch {r function flush}' "$RUN_SRC.tmp/tests/support/server.tcl" ||
            die "could not patch FUNCTION FLUSH in tests/support/server.tcl (suite changed?)"
        mv "$RUN_SRC.tmp" "$RUN_SRC"
    fi
fi

# The suite copies for SPAWN_UNITS (made once, like the tolerant copy): runtest runs from the
# copy, whose src/ holds only the programs the units start.
spawn_suite() {
    local dir="$CACHE/suite-$1"
    if [ ! -f "$dir/tests/test_helper.tcl" ]; then
        rm -rf "$dir" "$dir.tmp"
        mkdir -p "$dir.tmp/src"
        cp -a "$SRC/runtest" "$SRC/tests" "$dir.tmp/"
        mv "$dir.tmp" "$dir"
    fi
    local server
    if [ "$1" = hotkv ]; then server="$ROOT/scripts/redis-tests/hotkv-as-redis-server"; else server="$(command -v redis-server)"; fi
    ln -sfn "$server" "$dir/src/redis-server"
    ln -sfn "$(command -v redis-cli)" "$dir/src/redis-cli"
    ln -sfn "$(command -v redis-benchmark)" "$dir/src/redis-benchmark"
    echo "$dir"
}
is_spawn_unit() {
    local u
    for u in "${SPAWN_UNITS[@]}"; do [ "unit/$u" = "$1" ] && return 0; done
    return 1
}

# Resolve unit names to the suite's "unit/..." form; keep ones the suite lacks to report them.
resolve_unit() {
    local u="${1%.tcl}"
    u="${u#unit/}"
    if [ -f "$SRC/tests/unit/$u.tcl" ]; then echo "unit/$u"
    elif [ -f "$SRC/tests/unit/type/$u.tcl" ]; then echo "unit/type/$u"
    else echo "unit/$u"; fi
}
RESOLVED=()
for u in "${UNITS[@]}"; do RESOLVED+=("$(resolve_unit "$u")"); done

# ---------------------------------------------------------------------------------------------
# Servers

WORK="$(mktemp -d "${TMPDIR:-/tmp}/hotkv-redis-tests.XXXXXX")"
SERVER_PID=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    if [ -n "$SERVER_PID" ]; then stop_server; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$RUN_HOTKV" = 1 ]; then
    echo "redis-tests: building bin/hotkv-server from the working tree"
    (cd "$ROOT" && go build -o bin/hotkv-server ./cmd/hotkv-server) || die "go build ./cmd/hotkv-server failed"
    HOTKV_VERSION="$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo unknown)"
fi
if [ "$RUN_REDIS" = 1 ]; then
    command -v redis-server >/dev/null || bash "$ROOT/scripts/setup.sh"
    command -v redis-server >/dev/null || die "redis-server not found (scripts/setup.sh installs it)"
    REDIS_VERSION="$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
fi

# A loopback port nobody listens on, below Linux's ephemeral range (32768 and up, where an
# outgoing connection's local port would make bind fail though nothing listens) and below
# runtest's own ports (its test server takes one just under --baseport, 21111 and up here).
free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((12000 + RANDOM % 8000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    die "no free loopback port found"
}

# A subshell, so that a refused connection cannot take the script's own descriptors with it.
ping_port() (
    reply=""
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 2 reply <&3 || true
    [ "${reply%$'\r'}" = "+PONG" ]
)

# A fresh server for every unit: units then cannot leak state or config into each other, and
# a crash shows up in the unit that caused it.
start_server() {
    local which="$1" try
    # A port can still be taken between the probe and the server's bind: try a few.
    for try in 1 2 3; do
        SERVER_PORT="$(free_port)"
        SERVER_DIR="$(mktemp -d "$WORK/$which.XXXXXX")"
        if [ "$which" = hotkv ]; then
            "$ROOT/bin/hotkv-server" --port "$SERVER_PORT" --bind 127.0.0.1 --appendonly no --save "" \
                --dir "$SERVER_DIR" --enable-debug-command yes >"$SERVER_DIR/server.log" 2>&1 &
        else
            redis-server --port "$SERVER_PORT" --bind 127.0.0.1 --save "" --appendonly no \
                --dir "$SERVER_DIR" --enable-debug-command yes >"$SERVER_DIR/server.log" 2>&1 &
        fi
        SERVER_PID=$!
        for _ in $(seq 1 100); do
            if ping_port "$SERVER_PORT" 2>/dev/null; then return 0; fi
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        stop_server
        echo "redis-tests: $which did not start on 127.0.0.1:$SERVER_PORT (try $try of 3)" >&2
    done
    tail -n 20 "$SERVER_DIR/server.log" >&2 || true
    die "$which did not start (its log above)"
}

stop_server() {
    local pid="$SERVER_PID"
    SERVER_PID=""
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------
# Running a unit

# The same flags for both servers. --durable: an unexpected error reply inside a test (an
# unknown command, say) fails that test instead of killing the whole unit, so a server that
# lacks a command still gets counted test by test; Redis itself raises none, so its numbers
# are unchanged. Errors outside any test (in a unit's setup) still abort the unit. --clients
# is left out: in external mode runtest always uses one test client.
#
# Skipped on both servers, because they assume the server runs one command at a time in the
# order commands from different connections were sent, which a multi-threaded server does not
# promise: "BRPOPLPUSH with multiple blocked clients" sends BRPOPLPUSH on two connections
# back to back and expects the first one sent to block first; when the second connection's
# command runs first the test waits for ever and its unit stops there.
SKIP_TESTS=("BRPOPLPUSH with multiple blocked clients")
runtest_flags() {
    printf '%s\n' --host 127.0.0.1 --port "$1" --singledb --ignore-encoding --durable \
        --tags "$DENY_TAGS" --timeout "$TEST_TIMEOUT"
    local t
    for t in "${SKIP_TESTS[@]}"; do
        printf '%s\n' --skiptest "$t"
    done
}
FLAGS_SHOWN="./runtest --host 127.0.0.1 --port P --singledb --ignore-encoding --durable --tags \"$DENY_TAGS\" --timeout $TEST_TIMEOUT --skiptest \"${SKIP_TESTS[*]}\" --baseport B --single unit/<name>"

slug() { echo "${1#unit/}" | tr '/' '_'; }
# Where a server's logs go: results/redis, results/hotkv, and results/hotkv-tolerant for
# --tolerate-function-flush, so that a diagnostic run never stands in for a real one later.
results_dir() {
    if [ "$1" = hotkv ] && [ "$TOLERATE_FF" = 1 ]; then echo "$RESULTS/hotkv-tolerant"; else echo "$RESULTS/$1"; fi
}

# Runs one unit against one server; leaves <slug>.log (runtest output, colours stripped) and
# <slug>.meta (status, seconds, reason) under results/<server>/.
run_unit() {
    local which="$1" unit="$2" dir s
    dir="$(results_dir "$1")"
    s="$(slug "$unit")"
    mkdir -p "$dir"
    local log="$dir/$s.log" meta="$dir/$s.meta"
    if [ ! -f "$SRC/tests/$unit.tcl" ]; then
        printf 'status=missing\nseconds=0\nreason=not in the fetched suite\n' >"$meta"
        : >"$log"
        return 0
    fi
    local -a flags
    local run_src="$RUN_SRC" spawn=0
    if is_spawn_unit "$unit"; then
        spawn=1
        run_src="$(spawn_suite "$which")"
        SERVER_DIR="$(mktemp -d "$WORK/$which.XXXXXX")"
        : >"$SERVER_DIR/server.log"
        mapfile -t flags < <(runtest_flags "" | sed '1,/^--singledb$/d')
    else
        start_server "$which"
        mapfile -t flags < <(runtest_flags "$SERVER_PORT")
    fi
    # Each run gets its own --baseport so that its test-server port never collides with a
    # leftover one. timeout(1) signals its whole process group, runtest's client included.
    local baseport=$((21111 + (RANDOM % 200) * 40)) start end rc=0
    start=$(date +%s)
    (cd "$run_src" && HOTKV_BIN="$ROOT/bin/hotkv-server" TERM=dumb timeout --kill-after=10 "$UNIT_TIMEOUT" ./runtest "${flags[@]}" \
        --baseport "$baseport" --single "$unit" </dev/null 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$log") || rc=$?
    end=$(date +%s)
    local status="done" reason=""
    if [ "$spawn" = 0 ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
        status=aborted
        reason="the server exited during the unit: $(tail -n 3 "$SERVER_DIR/server.log" | tr '\n' ' ' | cut -c1-300)"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        status=aborted; reason="timed out after ${UNIT_TIMEOUT}s (--unit-timeout)"
    elif grep -q '^\[exception\]' "$log"; then
        status=aborted; reason="$(stop_reasons "$log" exception | head -n1)"
    elif grep -q '^\[TIMEOUT\]' "$log"; then
        status=aborted; reason="no progress for ${TEST_TIMEOUT}s (runtest --timeout) in: $(grep -m1 -o '(IN PROGRESS) .*' "$log" | cut -c15- || true)"
    elif ! grep -Eq '^\[[0-9]+/[0-9]+ done\]' "$log"; then
        status=aborted; reason="runtest exited with status $rc before the unit finished: $(tail -n 1 "$log" | cut -c1-200)"
    fi
    local blocks
    blocks="$(stop_reasons "$log" block)"
    if [ -n "$blocks" ]; then
        # Some start_server block stopped early: the tests after that point in it never ran.
        local n
        n=$(printf '%s\n' "$blocks" | wc -l)
        if [ "$status" = "done" ]; then status=partial; reason=""; else reason="$reason; "; fi
        reason="$reason$n start_server block(s) stopped early, first: $(printf '%s\n' "$blocks" | head -n1)"
    fi
    if [ "$status" = aborted ] && [ "$spawn" = 0 ] && [ "$which" = hotkv ] && kill -0 "$SERVER_PID" 2>/dev/null && ! ping_port "$SERVER_PORT" 2>/dev/null; then
        reason="$reason; the server no longer answered PING afterwards"
    fi
    [ "$spawn" = 1 ] || stop_server
    printf 'status=%s\nseconds=%s\nreason=%s\ndate=%s\n' "$status" "$((end - start))" "$reason" "$(date -u +%Y-%m-%dT%H:%MZ)" >"$meta"
}

# Why a unit (or a start_server block of it) stopped, as "error (at: suite command)": the
# error, and the innermost suite command that raised it (the first one-line quoted command in
# the Tcl stack that is not the client's own plumbing). Two shapes: "[exception]: Executing
# test client: ERR ..." (the unit died), and, thanks to --durable, "[err]: <error without its
# first 10 characters>" followed by the full error, with no "NAME in tests/FILE.tcl" in it: an
# error inside a start_server block but outside any test, which ends that block only.
stop_reasons() {
    LC_ALL=C awk -v mode="$2" '
        function flush() { if (msg != "") { if (where != "") msg = msg " (at: " where ")"; gsub(/[^[:print:]]/, "?", msg); print substr(msg, 1, 300) } msg = ""; where = ""; grab = 0; want = 0 }
        mode == "exception" && /^\[exception\]: / { flush(); msg = $0; sub(/^\[exception\]: (Executing test client: )?/, "", msg); sub(/\.$/, "", msg); grab = 1; next }
        mode == "block" && /^\[err\]: / { flush(); if ($0 !~ / in tests\/[^ ]*\.tcl$/) { grab = 1; first = 1 } ; next }
        grab && first { msg = $0; first = 0; next }
        grab && /^(    )?(while executing|invoked from within)$/ { want = 1; next }
        grab && want && /^"/ { want = 0; if ($0 ~ /srv \$level|^"uplevel|^"\[/ || $0 !~ /"$/) next; where = substr($0, 2, length($0) - 2); grab = 0; next }
        /^\[(ok|err|skip|ignore|exception)\]|^\[[0-9]+\/[0-9]+ done\]/ { grab = 0 }
        END { flush() }
    ' "$1"
}

meta() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -n1; }

# Names of passed tests, one per line, sorted (duplicates kept: some units repeat a name).
ok_names() { sed -n 's/^\[ok\]: \(.*\) ([0-9]* ms)$/\1/p' "$1" | LC_ALL=C sort; }
# "name<TAB>failure message", for every failed test. An assertion's message is the line after
# "[err]: NAME in tests/FILE.tcl"; for any other error (with --durable) that line is the error
# less its first 10 characters (runtest strips an "assertion:" prefix it does not have), and the
# next line, the start of the Tcl stack, is the whole error: take that one then. Bytes that are
# not printable ASCII (binary payloads in a failing command) become "?".
err_lines() {
    LC_ALL=C awk '
        function out(m) { gsub(/[^[:print:]\t]/, "?", m); gsub(/\t/, " ", m); print name "\t" m; state = 0 }
        state == 2 { if (length($0) > 10 && substr($0, 11) == m1) out($0); else out(m1) }
        /^\[err\]: / && !/ in tests\/[^ ]*\.tcl$/ { next } # a block-level stop, not a test
        /^\[err\]: / { name = $0; sub(/^\[err\]: /, "", name); sub(/ in tests\/[^ ]*\.tcl$/, "", name); state = 1; next }
        state == 1 { m1 = $0; state = 2; next }
        END { if (state == 2) out(m1); else if (state == 1) out("") }
    ' "$1"
}
count() { grep -c "$1" "$2" 2>/dev/null || true; }
# [err] lines of tests (block-level stops, see stop_reasons, are no test).
ERR_RE='^\[err\]: .* in tests/[^ ]*\.tcl$'


echo "redis-tests: suite redis $REDIS_SRC_VERSION; units: ${RESOLVED[*]}"
T0=$(date +%s)
for unit in "${RESOLVED[@]}"; do
    for which in redis hotkv; do
        if [ "$which" = redis ] && [ "$RUN_REDIS" = 0 ]; then continue; fi
        if [ "$which" = hotkv ] && [ "$RUN_HOTKV" = 0 ]; then continue; fi
        printf 'redis-tests: %-22s on %-5s ... ' "$unit" "$which"
        run_unit "$which" "$unit"
        m="$(results_dir "$which")/$(slug "$unit").meta"
        l="$(results_dir "$which")/$(slug "$unit").log"
        printf '%s, %ss, %s ok, %s err' "$(meta "$m" status)" "$(meta "$m" seconds)" "$(count '^\[ok\]' "$l")" "$(count "$ERR_RE" "$l")"
        if [ "$(meta "$m" status)" = "done" ]; then echo; else echo " ($(meta "$m" reason | cut -c1-160))"; fi
    done
done
ELAPSED=$(($(date +%s) - T0))

# ---------------------------------------------------------------------------------------------
# Report

md() { printf '%s' "$1" | tr '`|' "'/" ; } # a value that is safe inside `code` in a table cell

# The aborted? cell for a run that did not finish cleanly.
stop_cell() {
    case "$(meta "$2" status)" in
    partial) echo "partly — $1: $(md "$(meta "$2" reason)")" ;;
    *) echo "$1: $(md "$(meta "$2" reason)")" ;;
    esac
}

MISSING_LIST_MAX=40
GEN="$WORK/report.md"
TABLE="$WORK/table.md"
DETAILS="$WORK/details.md"
CHECK_FAILED=""
: >"$DETAILS"
{
    echo "| unit | Redis 7 passed | HotKV passed | HotKV passes of Redis's passes (%) | failed | aborted? |"
    echo "| --- | ---: | ---: | ---: | ---: | --- |"
} >"$TABLE"
TOT_R=0; TOT_H=0; TOT_BOTH=0; TOT_F=0; ALL_PAIRED=1
for unit in "${RESOLVED[@]}"; do
    s="$(slug "$unit")"
    rl="$RESULTS/redis/$s.log"; rm_="$RESULTS/redis/$s.meta"
    hl="$(results_dir hotkv)/$s.log"; hm="$(results_dir hotkv)/$s.meta"
    if [ "$(meta "$rm_" status)" = missing ] || [ "$(meta "$hm" status)" = missing ]; then
        echo "| \`$unit\` | — | — | — | — | not in the suite |" >>"$TABLE"
        continue
    fi
    have_r=0; have_h=0
    [ -f "$rm_" ] && have_r=1
    [ -f "$hm" ] && have_h=1
    [ "$have_r$have_h" = 11 ] || ALL_PAIRED=0
    r_ok="—"; h_ok="—"; pct="—"; failed="—"; aborted="—"
    ok_names "$rl" >"$WORK/r.ok" 2>/dev/null || : >"$WORK/r.ok"
    ok_names "$hl" >"$WORK/h.ok" 2>/dev/null || : >"$WORK/h.ok"
    if [ "$have_r" = 1 ]; then
        r_ok=$(wc -l <"$WORK/r.ok")
        TOT_R=$((TOT_R + r_ok))
        [ "$(meta "$rm_" status)" = "done" ] || aborted="$(stop_cell Redis "$rm_")"
    fi
    if [ "$have_h" = 1 ]; then
        h_ok=$(wc -l <"$WORK/h.ok")
        failed=$(count "$ERR_RE" "$hl")
        TOT_H=$((TOT_H + h_ok)); TOT_F=$((TOT_F + failed))
        if [ "$(meta "$hm" status)" = "done" ]; then
            [ "$aborted" != "—" ] || aborted="no"
        else
            a="$(stop_cell HotKV "$hm")"
            if [ "$aborted" = "—" ]; then aborted="$a"; else aborted="$aborted; $a"; fi
        fi
    fi
    if [ "$have_r" = 1 ] && [ "$have_h" = 1 ]; then
        # Counted by name, not by raw totals: a test HotKV passes but Redis fails does not make
        # up for one Redis passes and HotKV fails. comm pairs duplicate names one to one.
        both=$(LC_ALL=C comm -12 "$WORK/r.ok" "$WORK/h.ok" | wc -l)
        TOT_BOTH=$((TOT_BOTH + both))
        if [ "$r_ok" -gt 0 ]; then
            pct=$(awk -v a="$both" -v b="$r_ok" 'BEGIN { printf "%.1f", 100 * a / b }')
            if [ -n "$CHECK_PCT" ] && awk -v p="$pct" -v c="$CHECK_PCT" 'BEGIN { exit !(p < c) }'; then
                CHECK_FAILED="$CHECK_FAILED $unit($pct%)"
            fi
        fi
        LC_ALL=C comm -23 "$WORK/r.ok" "$WORK/h.ok" >"$WORK/miss"
        nmiss=$(wc -l <"$WORK/miss")
        if [ "$nmiss" -gt 0 ]; then
            err_lines "$hl" >"$WORK/h.err"
            {
                echo "### \`$unit\`: $nmiss passed on Redis but not on HotKV"
                echo
                case "$(meta "$hm" status)" in
                aborted) echo "HotKV's run of the unit aborted: $(md "$(meta "$hm" reason)"). The tests after that point did not run."; echo ;;
                partial) echo "HotKV's run did not finish every block: $(md "$(meta "$hm" reason)"). The rest of such a block did not run."; echo ;;
                esac
                # One line per test, HotKV's failure message when it ran, else why it did not;
                # no list when HotKV ran no test of the unit at all (it is all "did not run").
                if [ "$(grep -c '^\[ok\]\|^\[err\]' "$hl")" != 0 ]; then
                    awk -F'\t' -v max="$MISSING_LIST_MAX" -v errs="$WORK/h.err" '
                        FILENAME == errs { if (!($1 in msg)) msg[$1] = $2; next }
                        {
                            n++
                            if (n > max) next
                            name = $0; gsub(/`/, "\047", name)
                            why = ($0 in msg) ? msg[$0] : "did not run"
                            gsub(/`/, "\047", why)
                            if (length(why) > 160) why = substr(why, 1, 157) "..."
                            printf "- `%s` — %s\n", name, why
                        }
                        END { if (n > max) printf "- … and %d more (full output: runtest logs under .cache/redis-src/results/)\n", n - max }
                    ' "$WORK/h.err" "$WORK/miss"
                    echo
                fi
            } >>"$DETAILS"
        fi
    fi
    echo "| \`$unit\` | $r_ok | $h_ok | $pct | $failed | $aborted |" >>"$TABLE"
done
if [ "$TOT_R" -gt 0 ] && [ "$ALL_PAIRED" = 1 ]; then
    tot_pct=$(awk -v a="$TOT_BOTH" -v b="$TOT_R" 'BEGIN { printf "%.1f", 100 * a / b }')
    echo "| **all** | **$TOT_R** | **$TOT_H** | **$tot_pct** | **$TOT_F** | |" >>"$TABLE"
fi

source_note() {
    local which="$1" run="$2" s dates
    if [ "$run" = 1 ]; then echo "run now"; return; fi
    dates=$(for unit in "${RESOLVED[@]}"; do s="$(slug "$unit")"; meta "$(results_dir "$which")/$s.meta" date; done | sort -u | tr '\n' ' ')
    if [ -n "$dates" ]; then echo "from an earlier run's logs (${dates% })"; else echo "not run"; fi
}

{
    echo "# Compatibility with Redis's own test suite"
    echo
    echo "<!-- Generated by scripts/redis-tests.sh (make redis-tests): everything above \"## Notes\" is rewritten on each run. -->"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); run time ${ELAPSED}s"
    echo "- Suite: Debian source package \`redis\` $REDIS_SRC_VERSION (\`apt-get source redis\`), units in external mode unless listed below"
    echo "- Servers: Redis $(source_note redis "$RUN_REDIS")${REDIS_VERSION:+ (redis-server $REDIS_VERSION)}; HotKV $(source_note hotkv "$RUN_HOTKV")${HOTKV_VERSION:+ (working tree at $HOTKV_VERSION)}; a fresh server per unit"
    echo "- Flags, the same for both servers: \`$FLAGS_SHOWN\`"
    echo "- Units started by runtest itself (SPAWN_UNITS: ${SPAWN_UNITS[*]}): the same flags less \`--host/--port/--singledb\`; runtest starts each server the unit asks for from \`src/redis-server\` with the suite's default.conf and the unit's overrides, which for HotKV is \`scripts/redis-tests/hotkv-as-redis-server\` (it drops only Redis-only directives: the logo, daemonize, replication and module switches)"
    if [ "$TOLERATE_FF" = 1 ]; then
        echo "- **Diagnostic run (--tolerate-function-flush): the suite's external-mode setup ignored errors from FUNCTION FLUSH. Not the yardstick.**"
    fi
    echo
    echo "## Per unit"
    echo
    echo "*passed* counts \`[ok]\` tests; the percentage is the share of the tests Redis passed that HotKV also passed (matched by name); *failed* counts HotKV's \`[err]\`; *aborted?* says whether a run ended before the unit's last test, and why."
    echo
    cat "$TABLE"
    echo
    echo "## Passed on Redis, not on HotKV"
    echo
    if [ -s "$DETAILS" ]; then
        cat <<EOF
Per unit, at most $MISSING_LIST_MAX names each (the counts are exact), with HotKV's failure message. *did not run*: HotKV's run never reached the test (the unit or its block stopped first), or the suite skipped it after asking the server (\`trim on SET with big value\` runs only when INFO's mem_allocator is jemalloc). A unit in which HotKV ran no test at all gets no list.
EOF
        echo
        cat "$DETAILS"
    else
        echo "None."
        echo
    fi
} >"$GEN"

# Keep the hand-written part: everything from the first "## Notes" heading on.
NOTES="$WORK/notes.md"
: >"$NOTES"
if [ -f "$OUT" ]; then
    awk 'found || /^## Notes[[:space:]]*$/ { found = 1; print }' "$OUT" >"$NOTES"
fi
mkdir -p "$(dirname "$OUT")"
if [ -s "$NOTES" ]; then
    cat "$GEN" "$NOTES" >"$OUT"
else
    sed '$d' "$GEN" >"$OUT" # drop the trailing blank line
fi

echo
cat "$TABLE"
echo
echo "redis-tests: ${ELAPSED}s; report in ${OUT#"$ROOT"/}"
if [ -n "$CHECK_FAILED" ]; then
    echo "redis-tests: below ${CHECK_PCT}%:$CHECK_FAILED" >&2
    exit 1
fi
exit 0
