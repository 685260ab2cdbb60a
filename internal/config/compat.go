package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Doc texts shared by a family of Redis directives that configure machinery HotKV does not
// have.
const (
	docDefrag = "Redis's active defragmentation of jemalloc's memory. HotKV's memory is Go's heap, managed by its garbage collector: there is no allocator to defragment. " + inertNote
	docRepl   = "Redis's asynchronous replication (masters and replicas). HotKV replicates with Raft (the `raft-*` directives, docs/replication.md) and has no Redis replicas or masters; `replicaof` is refused. " + inertNote
	docBus    = "Redis Cluster's gossip bus. HotKV's cluster (`cluster-enabled`, docs/cluster.md) keeps its slot map in a Raft group of its own and fails over inside each shard's Raft group, so it has no bus, node timeout or replica migration to configure. " + inertNote
	docLazy   = "Redis's background freeing. In HotKV every deletion is lazy already: Go's garbage collector frees memory in the background, off the command path. " + inertNote
	docCPU    = "CPU affinity of one of Redis's threads. Go schedules HotKV's goroutines over `GOMAXPROCS` threads; pin the whole process with `taskset` or a cgroup instead. " + inertNote
	docDebug  = "One of Redis's test hooks, for machinery HotKV does not have. " + inertNote
	docAOF    = "Part of how Redis 7 writes its multi-part AOF and rewrites it. HotKV's append-only log (docs/persistence.md) is its own format: it fsyncs as `appendfsync` says, during a rewrite too, and its rewrite writes a HotKV snapshot as the new base. " + inertNote
	docRDB    = "Part of how Redis writes an RDB file. A HotKV snapshot is its own format (HKVS, docs/persistence.md): uncompressed, always checksummed (CRC32C), written in one pass. " + inertNote
	docTLSOut = "A setting of the TLS connections Redis opens itself (to its master, on the cluster bus). HotKV opens TLS connections to no other server. " + inertNote
	docSyslog = "Where syslog messages go when `syslog-enabled` is on, which HotKV refuses. " + inertNote
	docTitle  = "Redis rewrites its process title (what `ps` shows). HotKV keeps its command line. " + inertNote

	inertNote = "Accepted so that a Redis configuration file loads, and shown by CONFIG GET; it changes nothing, and a value other than the default is listed in a warning at startup."
)

const maxInt32 = 1<<31 - 1

// compatDirectives are the rest of Redis 7.0's configuration table: directives for parts of
// Redis that HotKV does not have, so that a redis.conf (Debian's, with its `daemonize`,
// `rdbcompression` and `lazyfree-*` lines) loads as it is. Most are Inert; those whose other
// values ask for behaviour a user would rely on are Unsupported. Types, ranges, defaults,
// aliases and which can change at run time are Redis 7.0's (src/config.c).
func compatDirectives() []*Directive {
	g := "redis compatibility"
	inert := func(d *Directive) *Directive {
		d.Inert, d.Group = true, g
		return d
	}
	unsupported := func(d *Directive, reason string) *Directive {
		d.Unsupported, d.Group = reason, g
		d.Doc = "Only the default is accepted: " + reason
		return d
	}
	return []*Directive{
		inert(&Directive{Name: "activerehashing", Type: Bool, Default: "yes", Mutable: true,
			Doc: "Redis's incremental rehashing of its main tables. A HotKV shard resizes its table in one step (shards keep each table small), so there is no rehash to drive. " + inertNote}),
		inert(&Directive{Name: "always-show-logo", Type: Bool, Default: "no", Doc: "HotKV prints no ASCII-art logo at startup. " + inertNote}),
		unsupported(&Directive{Name: "activedefrag", Type: Bool, Default: "no", Mutable: true},
			"Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc (HotKV's memory is Go's heap, which its garbage collector manages)"),
		inert(&Directive{Name: "active-defrag-cycle-min", Type: Int, Default: "1", Min: 1, Max: 99, Mutable: true, Doc: docDefrag}),
		inert(&Directive{Name: "active-defrag-cycle-max", Type: Int, Default: "25", Min: 1, Max: 99, Mutable: true, Doc: docDefrag}),
		inert(&Directive{Name: "active-defrag-ignore-bytes", Type: Memory, Default: "104857600", Min: 1, Max: math.MaxInt64, Mutable: true, Doc: docDefrag}),
		inert(&Directive{Name: "active-defrag-max-scan-fields", Type: Int, Default: "1000", Min: 1, Max: math.MaxInt64, Mutable: true, Doc: docDefrag}),
		inert(&Directive{Name: "active-defrag-threshold-lower", Type: Int, Default: "10", Min: 0, Max: 1000, Mutable: true, Doc: docDefrag}),
		inert(&Directive{Name: "active-defrag-threshold-upper", Type: Int, Default: "100", Min: 0, Max: 1000, Mutable: true, Doc: docDefrag}),
		inert(&Directive{Name: "aof-disable-auto-gc", Type: Bool, Default: "no", Mutable: true, Doc: docAOF}),
		inert(&Directive{Name: "aof-rewrite-incremental-fsync", Type: Bool, Default: "yes", Mutable: true, Doc: docAOF}),
		inert(&Directive{Name: "aof-timestamp-enabled", Type: Bool, Default: "no", Mutable: true, Doc: docAOF}),
		inert(&Directive{Name: "aof-use-rdb-preamble", Type: Bool, Default: "yes", Mutable: true, Doc: docAOF}),
		inert(&Directive{Name: "no-appendfsync-on-rewrite", Type: Bool, Default: "no", Mutable: true, Doc: docAOF}),
		inert(&Directive{Name: "rdbcompression", Type: Bool, Default: "yes", Mutable: true, Doc: docRDB}),
		inert(&Directive{Name: "rdbchecksum", Type: Bool, Default: "yes", Doc: docRDB}),
		inert(&Directive{Name: "rdb-del-sync-files", Type: Bool, Default: "no", Mutable: true, Doc: docRDB}),
		inert(&Directive{Name: "rdb-save-incremental-fsync", Type: Bool, Default: "yes", Mutable: true, Doc: docRDB}),
		inert(&Directive{Name: "aof_rewrite_cpulist", Type: String, Default: "", Doc: docCPU}),
		inert(&Directive{Name: "bgsave_cpulist", Type: String, Default: "", Doc: docCPU}),
		inert(&Directive{Name: "bio_cpulist", Type: String, Default: "", Doc: docCPU}),
		inert(&Directive{Name: "server_cpulist", Type: String, Default: "", Doc: docCPU}),
		inert(&Directive{Name: "io-threads", Type: Int, Default: "1", Min: 1, Max: 128,
			Doc: "Redis's threads for socket reads and writes. HotKV serves each connection on its own goroutine over every core (`GOMAXPROCS`). " + inertNote}),
		inert(&Directive{Name: "io-threads-do-reads", Type: Bool, Default: "no",
			Doc: "Whether Redis's I/O threads also read. HotKV reads and parses on each connection's goroutine. " + inertNote}),
		inert(&Directive{Name: "jemalloc-bg-thread", Type: Bool, Default: "yes", Mutable: true,
			Doc: "jemalloc's background purging thread. HotKV does not use jemalloc; Go returns freed memory to the system in the background itself. " + inertNote}),
		inert(&Directive{Name: "disable-thp", Type: Bool, Default: "yes",
			Doc: "Redis turns transparent huge pages off for itself because they make its fork-based snapshots copy more memory and stall. HotKV does not fork to save, so it leaves the system's THP setting as it is. " + inertNote}),
		inert(&Directive{Name: "dynamic-hz", Type: Bool, Default: "yes", Mutable: true,
			Doc: "Redis raises `hz` with the number of clients. HotKV's client timeouts and buffer releases do not scan clients on a cron, so nothing depends on the client count. " + inertNote}),
		inert(&Directive{Name: "crash-log-enabled", Type: Bool, Default: "yes", Mutable: true,
			Doc: "Redis's crash report on a fatal signal. A HotKV crash prints Go's panic and the goroutines' stacks to its log output. " + inertNote}),
		inert(&Directive{Name: "crash-memcheck-enabled", Type: Bool, Default: "yes", Mutable: true,
			Doc: "Redis's memory test after a crash. Go checks memory safety itself. " + inertNote}),
		{Name: "enable-module-command", Type: Enum, Default: "no", Values: []string{"no", "yes", "local"}, Group: g,
			Doc: "Whether `MODULE LOAD`, `LOADEX` and `UNLOAD` may be called: `yes`, `local` (from a loopback address or a Unix socket) or `no`, as in Redis, which refuses them otherwise. HotKV loads no Redis modules, so where allowed they fail with Redis's errors for a module that cannot be loaded or is not loaded; `MODULE LIST` is always empty."},
		{Name: "enable-protected-configs", Type: Enum, Default: "no", Values: []string{"no", "yes", "local"}, Group: g,
			Doc: "Whether CONFIG SET may change `dir` and `dbfilename` in Redis. HotKV never lets it: they are set at startup only, and CONFIG SET answers `can't set protected config`. The setting only decides, as in Redis, which refusal `CONFIG SET dir` gets while the data loads: `LOADING` when protected configs are allowed for the client, the protected-config error otherwise."},
		inert(&Directive{Name: "ignore-warnings", Type: String, Default: "", Mutable: true,
			Doc: "Redis startup warnings to silence (such as `ARM64-COW-BUG`). HotKV makes none of those checks. " + inertNote}),
		inert(&Directive{Name: "lazyfree-lazy-eviction", Type: Bool, Default: "no", Mutable: true, Doc: docLazy}),
		inert(&Directive{Name: "lazyfree-lazy-expire", Type: Bool, Default: "no", Mutable: true, Doc: docLazy}),
		inert(&Directive{Name: "lazyfree-lazy-server-del", Type: Bool, Default: "no", Mutable: true, Doc: docLazy}),
		inert(&Directive{Name: "lazyfree-lazy-user-del", Type: Bool, Default: "no", Mutable: true, Doc: docLazy}),
		inert(&Directive{Name: "replica-lazy-flush", Aliases: []string{"slave-lazy-flush"}, Type: Bool, Default: "no", Mutable: true, Doc: docLazy}),
		inert(&Directive{Name: "set-proc-title", Type: Bool, Default: "yes", Doc: docTitle}),
		inert(&Directive{Name: "proc-title-template", Type: String, Default: "{title} {listen-addr} {server-mode}", Mutable: true, Doc: docTitle}),
		inert(&Directive{Name: "tcp-backlog", Type: Int, Default: "511", Min: 0, Max: maxInt32,
			Doc: "The listen backlog. Go listens with the kernel's `net.core.somaxconn` as the backlog; Redis uses the smaller of the two, so raise somaxconn to raise either. " + inertNote}),
		inert(&Directive{Name: "shutdown-timeout", Type: Int, Default: "10", Min: 0, Max: maxInt32, Mutable: true,
			Doc: "How long Redis's SHUTDOWN waits for lagging replicas. HotKV has no Redis replicas to wait for: a Raft group commits every acknowledged write on a majority before the reply. " + inertNote}),
		inert(&Directive{Name: "bind-source-addr", Type: String, Default: "", Mutable: true,
			Doc: "The source address of the connections Redis opens (to its master, for MIGRATE). HotKV's outgoing connections use the system's choice. " + inertNote}),
		inert(&Directive{Name: "sanitize-dump-payload", Type: Enum, Default: "no", Values: []string{"no", "yes", "clients"}, Mutable: true,
			Doc: "Whether Redis checks a RESTORE payload deeply. HotKV always decodes a payload whole into its own structures before storing it, so a malformed one is refused: what `yes` asks for, every time. " + inertNote}),
		inert(&Directive{Name: "propagation-error-behavior", Type: Enum, Default: "ignore", Values: []string{"ignore", "panic", "panic-on-replicas"}, Mutable: true,
			Doc: "What a Redis replica does when a replicated command fails. On a HotKV Raft follower such a failure is logged and counted (RAFT STATUS apply_errors, docs/replication.md). " + inertNote}),
		inert(&Directive{Name: "tls-client-cert-file", Type: String, Default: "", Mutable: true, Doc: docTLSOut}),
		inert(&Directive{Name: "tls-client-key-file", Type: String, Default: "", Mutable: true, Doc: docTLSOut}),
		inert(&Directive{Name: "tls-client-key-file-pass", Type: String, Default: "", Mutable: true, Doc: docTLSOut}),
		inert(&Directive{Name: "tls-dh-params-file", Type: String, Default: "", Mutable: true,
			Doc: "Diffie-Hellman parameters for TLS. Go's crypto/tls offers only elliptic-curve key exchange, which needs none. " + inertNote}),
		unsupported(&Directive{Name: "tls-replication", Type: Bool, Default: "no", Mutable: true},
			"HotKV's Raft traffic between nodes is not encrypted by HotKV (docs/replication.md): keep it on a private network or a VPN"),
		unsupported(&Directive{Name: "tls-cluster", Type: Bool, Default: "no", Mutable: true},
			"HotKV's cluster traffic between nodes is not encrypted by HotKV (docs/cluster.md): keep it on a private network or a VPN"),
		unsupported(&Directive{Name: "socket-mark-id", Type: Int, Default: "0", Min: 0, Max: math.MaxUint32},
			"HotKV does not mark its sockets (SO_MARK)"),
		unsupported(&Directive{Name: "syslog-enabled", Type: Bool, Default: "no"},
			"HotKV logs to logfile or to standard output; hand that to syslog with the service manager (systemd's journal forwards it)"),
		inert(&Directive{Name: "syslog-ident", Type: String, Default: "redis", Doc: docSyslog}),
		inert(&Directive{Name: "syslog-facility", Type: Enum, Default: "local0",
			Values: []string{"user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}, Doc: docSyslog}),
		unsupported(&Directive{Name: "maxmemory-clients", Type: Special, Default: "0", Mutable: true, Parse: parseMemoryOrPercent},
			"HotKV does not evict clients to bound their memory (Redis 7's client eviction); client-output-buffer-limit and client-query-buffer-limit bound each client"),
		unsupported(&Directive{Name: "replicaof", Aliases: []string{"slaveof"}, Type: Special, Default: "", Parse: parseReplicaOf},
			"HotKV replicates with Raft, not REPLICAOF: see the raft-* directives and docs/replication.md"),
		unsupported(&Directive{Name: "min-replicas-to-write", Aliases: []string{"min-slaves-to-write"}, Type: Int, Default: "0", Min: 0, Max: maxInt32, Mutable: true},
			"HotKV has no Redis replicas to count: a Raft group (docs/replication.md) commits each write on a majority of its nodes before it answers"),
		inert(&Directive{Name: "min-replicas-max-lag", Aliases: []string{"min-slaves-max-lag"}, Type: Int, Default: "10", Min: 0, Max: maxInt32, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-backlog-size", Type: Memory, Default: "1048576", Min: 1, Max: math.MaxInt64, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-backlog-ttl", Type: Int, Default: "3600", Min: 0, Max: math.MaxInt64, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-disable-tcp-nodelay", Type: Bool, Default: "no", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-diskless-load", Type: Enum, Default: "disabled", Values: []string{"disabled", "on-empty-db", "swapdb"}, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-diskless-sync", Type: Bool, Default: "yes", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-diskless-sync-delay", Type: Int, Default: "5", Min: 0, Max: maxInt32, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-diskless-sync-max-replicas", Type: Int, Default: "0", Min: 0, Max: maxInt32, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-ping-replica-period", Aliases: []string{"repl-ping-slave-period"}, Type: Int, Default: "10", Min: 1, Max: maxInt32, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "repl-timeout", Type: Int, Default: "60", Min: 1, Max: maxInt32, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-announce-ip", Aliases: []string{"slave-announce-ip"}, Type: String, Default: "", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-announce-port", Aliases: []string{"slave-announce-port"}, Type: Int, Default: "0", Min: 0, Max: 65535, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-announced", Type: Bool, Default: "yes", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-ignore-disk-write-errors", Type: Bool, Default: "no", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-ignore-maxmemory", Aliases: []string{"slave-ignore-maxmemory"}, Type: Bool, Default: "yes", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-priority", Aliases: []string{"slave-priority"}, Type: Int, Default: "100", Min: 0, Max: maxInt32, Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-read-only", Aliases: []string{"slave-read-only"}, Type: Bool, Default: "yes", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "replica-serve-stale-data", Aliases: []string{"slave-serve-stale-data"}, Type: Bool, Default: "yes", Mutable: true, Doc: docRepl}),
		inert(&Directive{Name: "cluster-allow-pubsubshard-when-down", Type: Bool, Default: "yes", Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-allow-reads-when-down", Type: Bool, Default: "no", Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-allow-replica-migration", Type: Bool, Default: "yes", Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-announce-bus-port", Type: Int, Default: "0", Min: 0, Max: 65535, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-announce-hostname", Type: String, Default: "", Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-announce-ip", Type: String, Default: "", Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-announce-port", Type: Int, Default: "0", Min: 0, Max: 65535, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-announce-tls-port", Type: Int, Default: "0", Min: 0, Max: 65535, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-config-file", Type: String, Default: "nodes.conf", Doc: docBus}),
		inert(&Directive{Name: "cluster-link-sendbuf-limit", Type: Memory, Default: "0", Min: 0, Max: math.MaxInt64, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-migration-barrier", Type: Int, Default: "1", Min: 0, Max: maxInt32, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-node-timeout", Type: Int, Default: "15000", Min: 0, Max: math.MaxInt64, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-port", Type: Int, Default: "0", Min: 0, Max: 65535, Doc: docBus}),
		inert(&Directive{Name: "cluster-preferred-endpoint-type", Type: Enum, Default: "ip", Values: []string{"ip", "hostname", "unknown-endpoint"}, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-replica-no-failover", Aliases: []string{"cluster-slave-no-failover"}, Type: Bool, Default: "no", Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-replica-validity-factor", Aliases: []string{"cluster-slave-validity-factor"}, Type: Int, Default: "10", Min: 0, Max: maxInt32, Mutable: true, Doc: docBus}),
		inert(&Directive{Name: "cluster-require-full-coverage", Type: Bool, Default: "yes", Mutable: true, Doc: docBus}),
		{Name: "key-load-delay", Type: Int, Default: "0", Min: math.MinInt32, Max: maxInt32, Mutable: true, Hidden: true, Group: g,
			Doc: "A test aid, as in Redis: microseconds to sleep per key (or replayed effect) loaded at startup, so that a small dataset loads slowly enough to test clients against `-LOADING`. A negative value -N sleeps 1 µs per N keys. HotKV sleeps once per 1024 keys of a snapshot and once per batch of the append-only log. Never set it in production."},
		inert(&Directive{Name: "rdb-key-save-delay", Type: Int, Default: "0", Min: math.MinInt32, Max: maxInt32, Mutable: true, Hidden: true, Doc: docDebug}),
		inert(&Directive{Name: "loading-process-events-interval-bytes", Type: Int, Default: "2097152", Min: 1024, Max: maxInt32, Mutable: true, Hidden: true, Doc: docDebug}),
		inert(&Directive{Name: "use-exit-on-panic", Type: Bool, Default: "no", Mutable: true, Hidden: true, Doc: docDebug}),
		inert(&Directive{Name: "watchdog-period", Type: Int, Default: "0", Min: 0, Max: maxInt32, Mutable: true, Hidden: true, Doc: docDebug}),
		inert(&Directive{Name: "lua-enable-deprecated-api", Type: Bool, Default: "no", Hidden: true, Doc: docDebug}),
	}
}

// parseMemoryOrPercent checks a Redis memory-or-percentage value (maxmemory-clients) with
// Redis's errors: a memory value, or a percentage of maxmemory up to 100.
func parseMemoryOrPercent(v string) (string, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return "", errors.New("argument must be a memory or percent value")
		}
		if n > 100 {
			return "", errors.New("percentage argument must be less or equal to 100")
		}
		if n == 0 {
			return "0", nil // no limit, however written
		}
		return strconv.FormatInt(n, 10) + "%", nil
	}
	n, ok := ParseMemory(v)
	if !ok || n < 0 {
		return "", errors.New("argument must be a memory or percent value")
	}
	return strconv.FormatInt(n, 10), nil
}

// parseReplicaOf checks replicaof's "host port" (or "no one") as Redis does, so that a
// malformed line gets Redis's error before HotKV's refusal of replicaof itself.
func parseReplicaOf(v string) (string, error) {
	f := strings.Fields(v)
	switch {
	case len(f) == 0:
		return "", nil
	case len(f) != 2:
		return "", errors.New("wrong number of arguments")
	case strings.EqualFold(f[0], "no") && strings.EqualFold(f[1], "one"):
		return "", nil
	}
	if port, err := strconv.Atoi(f[1]); err != nil || port < 0 || port > 65535 {
		return "", errors.New("Invalid master port")
	}
	return f[0] + " " + f[1], nil
}
