#!/usr/bin/env bash
# Runs the Java client's tests (JUnit 5 via Maven Surefire) against a real hotkv-server that
# the tests start on a free loopback port and stop afterwards. JedisClusterTest and
# LettuceClusterTest each start a 3-shard x 3-node cluster with scripts/cluster-demo.sh (which
# needs redis-cli) on a free port base in 40000-54889, and tear it down.
#
# Dependencies come from Maven Central into the default local repository (~/.m2). The server
# binary is HOTKV_SERVER_BIN when set; otherwise bin/hotkv-server is (re)built at the
# repository root first (Go's build cache makes that quick when nothing changed).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if ! command -v mvn >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "test.sh: installing Maven (apt-get install maven)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null
  else
    echo "test.sh: Maven (mvn) is required" >&2
    exit 1
  fi
fi

if [ -z "${HOTKV_SERVER_BIN:-}" ]; then
  (cd "$root" && go build -o bin/hotkv-server ./cmd/hotkv-server)
  export HOTKV_SERVER_BIN="$root/bin/hotkv-server"
fi

cd "$here"
# -ntp keeps download progress out of the log; Surefire prints its per-class lines and the
# closing "Tests run: N, Failures: F, Errors: E, Skipped: S" summary, and mvn exits non-zero on
# any failure.
exec mvn -B -ntp test
