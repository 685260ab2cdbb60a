package config

import (
	"errors"
	"net"
	"strconv"
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
		{Name: "dir", Type: String, Default: "./data", Protected: true, Group: "general",
			Doc: "Working directory: the server changes into it at startup, and snapshots (`dbfilename`), the append-only log (`appenddirname`) and relative log and pid files are written there. The default `./data` is created if missing, so that out of the box a restart keeps rate-limit state; any other dir must exist, as in Redis. `CONFIG GET dir` reports it as an absolute path."},
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
		// Data types
		{Name: "hash-max-listpack-entries", Aliases: []string{"hash-max-ziplist-entries"}, Type: Int, Default: "512", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "data types",
			Doc: "Most fields a hash keeps in its compact encoding (OBJECT ENCODING `listpack`): one allocation, a few bytes per field, linear scans. A hash that grows past it becomes a hash table (`hashtable`) and stays one."},
		{Name: "hash-max-listpack-value", Aliases: []string{"hash-max-ziplist-value"}, Type: Int, Default: "64", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "data types",
			Doc: "Longest field or value, in bytes, a hash may hold and keep its compact encoding."},
		{Name: "zset-max-listpack-entries", Aliases: []string{"zset-max-ziplist-entries"}, Type: Int, Default: "128", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Most members a sorted set keeps in its compact encoding (OBJECT ENCODING `listpack`): one allocation in score order, linear scans. A sorted set that grows past it becomes a skip list with a member index (`skiplist`) and stays one."},
		{Name: "zset-max-listpack-value", Aliases: []string{"zset-max-ziplist-value"}, Type: Int, Default: "64", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Longest member, in bytes, a sorted set may hold and keep its compact encoding."},
		{Name: "set-max-intset-entries", Type: Int, Default: "512", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Most members a set whose members are all integers keeps in its compact encoding (OBJECT ENCODING `intset`: a sorted array of 64-bit integers, listed in numeric order). A set that grows past it, or gets a member that is not an integer, becomes a hash table (`hashtable`) and stays one. Values above 2^30 count as 2^30, as in Redis."},
		{Name: "hll-sparse-max-bytes", Type: Memory, Default: "3000", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Longest a HyperLogLog may grow in its sparse encoding (run-length opcodes, compact while few registers are set). An update that would take it past this turns it dense (12304 bytes, fixed), and it stays dense. Redis's default and format: the bytes are the same as Redis's for the same setting."},
		{Name: "list-max-listpack-size", Aliases: []string{"list-max-ziplist-size"}, Type: Int, Default: "-2", Min: -(1 << 31), Max: 1<<31 - 1, Mutable: true, Group: "data types",
			Doc: "Redis's quicklist node size. Accepted for compatibility and reported by CONFIG GET; HotKV keeps a list in one ring buffer, so it changes nothing."},
		{Name: "list-compress-depth", Type: Int, Default: "0", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "data types",
			Doc: "Redis's quicklist compression depth. Accepted for compatibility and reported by CONFIG GET; HotKV does not compress lists, so it changes nothing."},
		// Rate limiting (spec/RATELIMIT.md §9)
		{Name: "throttle-compat", Type: Enum, Default: "redis-cell", Values: []string{"redis-cell", "dragonfly"}, Mutable: true, Group: "ratelimit",
			Doc: "How CL.THROTTLE rounds its seconds. `redis-cell` (default): floor to ms, then round up to seconds, so an exact 10 s wait reads 10. `dragonfly`: round up to ms, then add one second to every non-zero value, as Dragonfly replies."},
		{Name: "ratelimit.max-limiters", Type: Int, Default: "10000", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "ratelimit",
			Doc: "Most named limiters RATELIMIT.CREATE may define. Lowering it below the current count removes nothing; CREATE fails until DROPs make room."},
		{Name: "ratelimit.sliding-window-max-entries", Type: Int, Default: "1024", Min: 1, Max: 1000000, Mutable: true, Group: "ratelimit",
			Doc: "Most log entries a sliding_window key keeps (K). Above it the closest entries merge at the later time, which can only deny early, never admit more than the limit. With limit <= K the log is exact to the ms. A change applies to each key's next recorded request."},
		// Snapshots (docs/persistence.md)
		{Name: "save", Type: Special, Default: "3600 1 300 100 60 10000", Mutable: true, Accumulate: true, Parse: parseSave, Group: "persistence",
			Doc: "Save points: `<seconds> <changes>` pairs. A background save (BGSAVE) starts when at least `changes` writes happened and more than `seconds` passed since the last successful save. `\"\"` disables them; then SHUTDOWN and SIGTERM do not save either (unless `SHUTDOWN SAVE`). In a config file, several `save` lines add up, as in Redis."},
		{Name: "dbfilename", Type: String, Default: "dump.hkv", Protected: true, Parse: parseDBFilename, Group: "persistence",
			Doc: "Snapshot file name inside `dir`. Written as `<name>.tmp`, fsynced, renamed over `<name>`, then the directory is fsynced; loaded at startup if it exists."},
		// Append-only log (docs/persistence.md)
		{Name: "appendonly", Type: Bool, Default: "yes", Mutable: true, Group: "persistence",
			Doc: "Log every write's effect to the append-only log in `dir`/`appenddirname`, so that a restart or a crash keeps the data (with the durability `appendfsync` gives). When the log exists it is what a start loads, not the snapshot. `CONFIG SET appendonly no` stops logging at run time; turning it on at run time is refused for now (it needs BGREWRITEAOF): restart with `appendonly yes`."},
		{Name: "appendfsync", Type: Enum, Default: "everysec", Values: []string{"always", "everysec", "no"}, Mutable: true, Group: "persistence",
			Doc: "When the log is fsynced. `always`: before any reply is sent (one fsync per batch of commands, shared by the connections waiting at the same moment); no acknowledged write is lost, even on power loss. `everysec`: written every 100 ms and fsynced once a second; a process crash loses at most 100 ms, a power loss about a second. `no`: written every 100 ms, fsynced when the OS decides."},
		{Name: "appenddirname", Type: String, Default: "appendonlydir", Protected: true, Parse: parseLogName("appenddirname"), Group: "persistence",
			Doc: "Directory inside `dir` holding the append-only log: its manifest, an optional base snapshot and the log segments."},
		{Name: "appendfilename", Type: String, Default: "appendonly.hkvl", Protected: true, Parse: parseLogName("appendfilename"), Group: "persistence",
			Doc: "Base name of the log's files: `<name>.manifest`, `<name>.<seq>.base.hkvs`, `<name>.<seq>.incr.hkvl`."},
		{Name: "auto-aof-rewrite-percentage", Type: Int, Default: "100", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "persistence",
			Doc: "Start a rewrite of the append-only log (BGREWRITEAOF) automatically once it has grown by this percentage of its size when it was opened or last rewritten, and is at least `auto-aof-rewrite-min-size`. 0 disables automatic rewrites."},
		{Name: "auto-aof-rewrite-min-size", Type: Memory, Default: "67108864", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "persistence",
			Doc: "The smallest append-only log an automatic rewrite is started for (Redis's default, 64mb)."},
		{Name: "aof-load-truncated", Type: Bool, Default: "yes", Mutable: true, Group: "persistence",
			Doc: "At startup, a log whose last frame is torn (a crash while appending) is cut back to its last whole frame and loaded, with a warning. With `no` the server refuses to start instead (repair with `hotkv-server --check-aof --fix`). Damage anywhere else always refuses the start."},
		{Name: "lazyfree-lazy-user-flush", Type: Bool, Default: "no", Mutable: true, Group: "general",
			Doc: "Make FLUSHALL/FLUSHDB without SYNC or ASYNC free memory in the background."},
		{Name: "busy-reply-threshold", Aliases: []string{"lua-time-limit"}, Type: Int, Default: "5000", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "general",
			Doc: "Milliseconds a Lua script (EVAL, FCALL) may run before other clients' commands get `-BUSY` instead of waiting, and SCRIPT KILL or FUNCTION KILL may stop it; 0 never. The script itself keeps running until it ends or is killed."},
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

// parseSave checks save points as Redis 7 does: "" (none), or pairs of integers with seconds
// >= 1 and changes >= 0, separated by single spaces.
func parseSave(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	fields := strings.Split(v, " ")
	if len(fields)%2 != 0 {
		return "", errors.New("Invalid save parameters")
	}
	out := make([]string, len(fields))
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || (i%2 == 0 && n < 1) || (i%2 == 1 && n < 0) || n > 1<<31-1 {
			return "", errors.New("Invalid save parameters")
		}
		out[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(out, " "), nil
}

// SavePoint is one `save` pair: a background save is due after Changes writes once more than
// Seconds have passed since the last save.
type SavePoint struct{ Seconds, Changes int64 }

// SavePoints parses a normalized `save` value.
func SavePoints(v string) []SavePoint {
	f := strings.Fields(v)
	out := make([]SavePoint, 0, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		s, _ := strconv.ParseInt(f[i], 10, 64)
		c, _ := strconv.ParseInt(f[i+1], 10, 64)
		out = append(out, SavePoint{Seconds: s, Changes: c})
	}
	return out
}

// parseLogName checks appenddirname and appendfilename: a plain name, which the manifest's
// line format can carry.
func parseLogName(what string) func(string) (string, error) {
	return func(v string) (string, error) {
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\ \t\r\n\"'") {
			return "", errors.New(what + " must be a plain file name (no path, spaces or quotes)")
		}
		return v, nil
	}
}

func parseDBFilename(v string) (string, error) {
	if v == "" {
		return "", errors.New("dbfilename can't be empty")
	}
	if strings.ContainsAny(v, "/\\") {
		return "", errors.New("dbfilename can't be a path, just a filename")
	}
	return v, nil
}
