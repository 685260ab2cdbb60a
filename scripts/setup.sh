#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine. Safe to run again: each step checks
# first and does nothing when its tool is already there. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*"; }

# Root runs apt directly; anyone else needs sudo.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install PACKAGE... installs without prompts, running `apt-get update` only when the
# first attempt fails (a fresh machine's package lists may be stale or missing).
apt_install() {
	local policy=/usr/sbin/policy-rc.d added=""
	# Installing redis-server would start a Redis service on port 6379, where `make run` serves
	# HotKV. A policy-rc.d that says 101 ("action forbidden") stops Debian's maintainer scripts
	# from starting services, for the length of this install only.
	if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
	fi
	local rc=0
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" ||
		{ as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; } || rc=$?
	[ -n "$added" ] && rm -f "$policy"
	return $rc
}

# --- Go modules -----------------------------------------------------------------------------
command -v go >/dev/null || { echo "setup: Go is not installed; install Go $(sed -n 's/^go //p' go.mod) first" >&2; exit 1; }
say "go mod download"
go mod download

# --- Redis 7 (redis-cli for the smoke tests, redis-server for comparisons) ------------------
if ! command -v redis-cli >/dev/null || ! command -v redis-server >/dev/null; then
	say "installing redis-tools and redis-server from apt"
	apt_install redis-tools redis-server
fi
say "$(redis-cli --version), $(redis-server --version | cut -d' ' -f1-3)"

# --- Python (clients/python): the Python client issue adds its venv here --------------------

# --- Node.js (clients/node): the Node client issue adds npm ci here -------------------------

# --- Java (clients/java): the Java client issue adds Maven here -----------------------------

say "done"
