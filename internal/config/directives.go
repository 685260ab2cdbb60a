package config

import (
	"errors"
	"net"
	"strings"
)

// Directives returns the full config table, fresh on each call. Adding a directive here makes
// it a config-file line, a `--flag`, a CONFIG GET/SET name and a row in docs/config.md.
func Directives() []*Directive {
	return []*Directive{
		// Network
		{Name: "bind", Type: Special, Default: "127.0.0.1", Parse: parseBind, Group: "network",
			Doc: "Addresses to listen on, separated by spaces. The default serves loopback only; use `0.0.0.0` (with a password) to serve other hosts."},
		{Name: "port", Type: Int, Default: "6379", Min: 0, Max: 65535, Group: "network",
			Doc: "TCP port. 0 disables the TCP listener."},
		{Name: "timeout", Type: Int, Default: "0", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "network",
			Doc: "Close a client after this many seconds idle; 0 never."},
		{Name: "tcp-keepalive", Type: Int, Default: "300", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "network",
			Doc: "TCP keepalive period in seconds for client connections; 0 disables it."},
		{Name: "maxclients", Type: Int, Default: "10000", Min: 1, Max: 1<<31 - 1, Mutable: true, Group: "network",
			Doc: "Refuse new clients with `ERR max number of clients reached` beyond this many."},
		{Name: "proto-max-bulk-len", Type: Memory, Default: "536870912", Min: 1 << 20, Max: 1<<63 - 1, Mutable: true, Group: "network",
			Doc: "Largest bulk string a client may send, and the largest string SETRANGE/APPEND may build."},

		// General
		{Name: "databases", Type: Int, Default: "16", Min: 1, Max: 1<<31 - 1, Group: "general",
			Doc: "Number of numbered databases (SELECT 0 .. databases-1)."},
		{Name: "shards", Type: Int, Default: "0", Min: 0, Max: 65536, Group: "general",
			Doc: "Keyspace shards per database, rounded up to a power of two. 0 picks 16 x GOMAXPROCS (at least 64). More shards mean less lock contention on many cores."},
		{Name: "dir", Type: String, Default: ".", Group: "general",
			Doc: "Working directory: snapshots and logs are written here."},
		{Name: "hz", Type: Int, Default: "10", Min: 1, Max: 500, Mutable: true, Group: "general",
			Doc: "Background task frequency (active expiry runs every 1/hz s; values above 500 are clamped by Redis, rejected here)."},
		{Name: "loglevel", Type: Enum, Default: "notice", Values: []string{"debug", "verbose", "notice", "warning", "nothing"}, Mutable: true, Group: "general",
			Doc: "Log verbosity, with Redis's level names."},
		{Name: "logfile", Type: String, Default: "", Group: "general",
			Doc: "Log file path; empty logs to standard output."},
		{Name: "pidfile", Type: String, Default: "", Group: "general",
			Doc: "Write the process id to this file at start and remove it at shutdown."},
		{Name: "enable-debug-command", Type: Enum, Default: "no", Values: []string{"no", "yes", "local"}, Group: "general",
			Doc: "Allow DEBUG (including DEBUG CLOCK, which tests use to control time): `yes` for every client, `local` for loopback and unix-socket clients only."},
		{Name: "active-expire-effort", Type: Int, Default: "1", Min: 1, Max: 10, Mutable: true, Group: "general",
			Doc: "Share of CPU the active expiry cycle may use: 1 allows 25% of a core, each step up adds 25% more time per cycle."},
		// Rate limiting (spec/RATELIMIT.md §9)
		{Name: "throttle-compat", Type: Enum, Default: "redis-cell", Values: []string{"redis-cell", "dragonfly"}, Mutable: true, Group: "ratelimit",
			Doc: "How CL.THROTTLE rounds its seconds. `redis-cell` (default): floor to ms, then round up to seconds, so an exact 10 s wait reads 10. `dragonfly`: round up to ms, then add one second to every non-zero value, as Dragonfly replies."},
		{Name: "ratelimit.max-limiters", Type: Int, Default: "10000", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "ratelimit",
			Doc: "Most named limiters RATELIMIT.CREATE may define. Lowering it below the current count removes nothing; CREATE fails until DROPs make room."},
		{Name: "ratelimit.sliding-window-max-entries", Type: Int, Default: "1024", Min: 1, Max: 1000000, Mutable: true, Group: "ratelimit",
			Doc: "Most log entries a sliding_window key keeps (K). Above it the closest entries merge at the later time, which can only deny early, never admit more than the limit. With limit <= K the log is exact to the ms. A change applies to each key's next recorded request."},
		{Name: "lazyfree-lazy-user-flush", Type: Bool, Default: "no", Mutable: true, Group: "general",
			Doc: "Make FLUSHALL/FLUSHDB without SYNC or ASYNC free memory in the background."},
	}
}

func parseBind(v string) (string, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return "", errors.New("Too many bind addresses specified.")
	}
	for _, f := range fields {
		addr := strings.TrimPrefix(f, "-")
		if addr == "*" {
			continue
		}
		if net.ParseIP(addr) == nil {
			return "", errors.New("Invalid bind address '" + f + "'")
		}
	}
	return strings.Join(fields, " "), nil
}
