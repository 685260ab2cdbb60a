package config

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hotkv/hotkv/internal/pubsub"
)

// Directives returns the full config table, fresh on each call. Adding a directive here makes
// it a config-file line, a `--flag`, a CONFIG GET/SET name and a row in docs/config.md.
func Directives() []*Directive {
	return append(directives(), compatDirectives()...)
}

func directives() []*Directive {
	return []*Directive{
		// Network
		{Name: "bind", Type: Special, Default: "127.0.0.1 -::1", Mutable: true, Parse: parseBind, Group: "network",
			Doc: "Addresses to listen on (plain `port` and `tls-port`), separated by spaces; a `-` prefix makes an address optional (skipped if it cannot be bound, as `-::1` on a host without IPv6), `*` is every IPv4 address and `::*` every IPv6 one. Redis 7's redis.conf default, loopback only; serving other hosts also needs a password or `protected-mode no` (docs/security.md). CONFIG SET closes the old listeners of `port` and `tls-port` and opens the new ones, as Redis 7 does; if the new addresses cannot all be bound (`Failed to bind to specified addresses.`) the old ones open again. Connected clients stay. A Raft member refuses the change."},
		{Name: "protected-mode", Type: Bool, Default: "yes", Mutable: true, Group: "network",
			Doc: "While the `default` user has no password (`requirepass` empty and the user `nopass`), refuse clients connecting from any address other than 127.0.0.1 and ::1 with Redis's `-DENIED` error, then close them. Stops an unprotected server from being open to the network by a wide `bind` alone."},
		{Name: "port", Type: Int, Default: "6379", Min: 0, Max: 65535, Mutable: true, Group: "network",
			Doc: "TCP port. 0 disables the TCP listener. CONFIG SET listens on the new port first (a port that cannot be bound is refused: `Unable to listen on this port. Check server logs.`), then closes the old one; connected clients stay. A Raft member refuses the change (its group announces its address)."},
		{Name: "unixsocket", Type: String, Default: "", Group: "network",
			Doc: "Also serve clients on this Unix domain socket path (empty: none). A stale socket file left at the path is replaced at start, and the file is removed at shutdown. Unix-socket clients count as local for `protected-mode` and show `addr=<path>:0` and the `U` flag in CLIENT LIST."},
		{Name: "unixsocketperm", Type: Special, Default: "0", Parse: parseOctalPerm, Group: "network",
			Doc: "Permission bits (octal, as `700`) given to the `unixsocket` file; 0 leaves the process umask's."},
		{Name: "timeout", Type: Int, Default: "0", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "network",
			Doc: "Close a client after this many seconds idle; 0 never."},
		{Name: "tcp-keepalive", Type: Int, Default: "300", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "network",
			Doc: "TCP keepalive period in seconds for client connections; 0 disables it."},
		{Name: "maxclients", Type: Int, Default: "10000", Min: 1, Max: 1<<31 - 1, Mutable: true, Group: "network",
			Doc: "Refuse new clients with `ERR max number of clients reached` beyond this many."},
		{Name: "proto-max-bulk-len", Type: Memory, Default: "536870912", Min: 1 << 20, Max: 1<<63 - 1, Mutable: true, Group: "network",
			Doc: "Largest bulk string a client may send, and the largest string SETRANGE/APPEND may build."},
		{Name: "client-query-buffer-limit", Type: Memory, Default: "1073741824", Min: 1 << 20, Max: 1<<63 - 1, Mutable: true, Group: "network",
			Doc: "Most bytes of requests a client may have sent and not yet had executed (its query buffer, including a partly received command); a client past it is disconnected, without a reply, as Redis does."},

		// Security (docs/security.md)
		{Name: "requirepass", Type: String, Default: "", Mutable: true, Group: "security",
			Doc: "Password of the `default` user: clients must `AUTH <password>` (or `HELLO 3 AUTH default <password>`) before any other command. Empty makes the default user `nopass` again. The same as `ACL SETUSER default resetpass ><password>`; stored hashed (SHA-256) in the user, while CONFIG GET shows it as set, as in Redis."},
		{Name: "aclfile", Type: String, Default: "", Group: "security",
			Doc: "ACL file (Redis's format: one `user <name> <rules...>` line per user) loaded at startup, read again by ACL LOAD and rewritten by ACL SAVE. A file with any error stops the start. Cannot be combined with `user` lines in the config file."},
		{Name: "acllog-max-len", Type: Int, Default: "128", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "security",
			Doc: "Most entries ACL LOG keeps (denied commands, keys, channels and failed authentications)."},
		{Name: "acl-pubsub-default", Type: Enum, Default: "resetchannels", Values: []string{"allchannels", "resetchannels"}, Mutable: true, Group: "security",
			Doc: "Channel permissions new ACL users start with: `resetchannels` (none, Redis 7's default) or `allchannels`. Users that exist keep theirs."},

		// TLS (docs/security.md, internal/config/tls.go, internal/server/tls.go)
		{Name: "tls-port", Type: Int, Default: "0", Min: 0, Max: 65535, Mutable: true, Group: "TLS",
			Doc: "TLS port, on the `bind` addresses; 0 (the default) disables TLS. Served next to the plain `port` (set `port 0` for TLS only). CONFIG SET opens the new port (loading the TLS configuration if it was not yet), then closes the old one; open connections stay. A port that cannot be bound is refused (`Unable to listen on this port. Check server logs.`)."},
		{Name: "tls-cert-file", Type: String, Default: "", Mutable: true, Group: "TLS",
			Doc: "Server certificate (PEM; may hold the intermediate chain after the leaf). CONFIG SET of any tls-*-file reloads the certificates without a restart: new connections get the new ones, open ones keep theirs; a file that cannot be loaded is refused and the old configuration kept."},
		{Name: "tls-key-file", Type: String, Default: "", Mutable: true, Group: "TLS",
			Doc: "Private key of `tls-cert-file` (PEM: PKCS#1, PKCS#8 or EC)."},
		{Name: "tls-key-file-pass", Type: String, Default: "", Mutable: true, Group: "TLS",
			Doc: "Passphrase of an encrypted `tls-key-file`: encrypted PKCS#8 (OpenSSL 3's form; PBES2 with PBKDF2 and AES-CBC) or the legacy PEM encryption (`Proc-Type: 4,ENCRYPTED`)."},
		{Name: "tls-ca-cert-file", Type: String, Default: "", Mutable: true, Group: "TLS",
			Doc: "CA certificates (PEM) that client certificates must chain to. Required, or `tls-ca-cert-dir`, unless `tls-auth-clients no`."},
		{Name: "tls-ca-cert-dir", Type: String, Default: "", Mutable: true, Group: "TLS",
			Doc: "Directory whose PEM files hold more CA certificates for client certificates (every regular file is read; OpenSSL's hashed names are not needed)."},
		{Name: "tls-auth-clients", Type: Enum, Default: "yes", Values: []string{"no", "yes", "optional"}, Mutable: true, Group: "TLS",
			Doc: "Client certificates: `yes` requires one signed by the configured CA (mutual TLS), `optional` checks one if the client sends it, `no` asks for none."},
		{Name: "tls-protocols", Type: String, Default: "", Mutable: true, Parse: parseTLSProtocols, Group: "TLS",
			Doc: "TLS versions served, from `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3`, separated by spaces; empty means `TLSv1.2 TLSv1.3`, Redis's default. Go takes a lowest and a highest version, so the versions named must be adjacent (`TLSv1 TLSv1.3` is refused)."},
		{Name: "tls-ciphers", Type: String, Default: "", Mutable: true, Parse: parseTLSCiphers, Group: "TLS",
			Doc: "TLS 1.2 and older cipher suites, separated by `:` (OpenSSL's separator), spaces or commas: OpenSSL names (`ECDHE-RSA-AES256-GCM-SHA384`) or IANA names (`TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`) of the suites Go implements, or `DEFAULT`. Empty means Go's secure defaults. Unknown names and OpenSSL's selection syntax (`HIGH:!aNULL`) are refused with an error naming the suite."},
		{Name: "tls-ciphersuites", Type: String, Default: "", Mutable: true, Parse: parseTLSCipherSuites, Group: "TLS",
			Doc: "TLS 1.3 cipher suites, separated by `:`: `TLS_AES_128_GCM_SHA256`, `TLS_AES_256_GCM_SHA384`, `TLS_CHACHA20_POLY1305_SHA256`. Names are checked, but Go's crypto/tls always offers these three for TLS 1.3 (they are all secure), so a subset cannot be enforced; the CCM suites are refused."},
		{Name: "tls-prefer-server-ciphers", Type: Bool, Default: "no", Mutable: true, Group: "TLS",
			Doc: "Accepted for Redis compatibility. Go's crypto/tls picks the suite itself (by the client's hardware support for AES), so it changes nothing."},
		{Name: "tls-session-caching", Type: Bool, Default: "yes", Mutable: true, Group: "TLS",
			Doc: "Let clients resume TLS sessions (faster reconnects). Go's crypto/tls resumes with session tickets, which the server keeps no state for; `no` disables them."},
		{Name: "tls-session-cache-size", Type: Int, Default: "20480", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "TLS",
			Doc: "Accepted for Redis compatibility: Go's session tickets need no server-side cache, so there is no size to bound."},
		{Name: "tls-session-cache-timeout", Type: Int, Default: "300", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "TLS",
			Doc: "Accepted for Redis compatibility: Go's crypto/tls fixes a ticket's lifetime (7 days, with keys rotated daily)."},

		// Metrics (docs/operations.md, "Monitoring"; internal/metrics, internal/server/metrics.go)
		{Name: "metrics-port", Type: Int, Default: "0", Min: 0, Max: 65535, Mutable: true, Group: "metrics",
			Doc: "HTTP port of the Prometheus listener: `/metrics` (the INFO fields under redis_exporter's names, per-command and per-limiter counters), `/healthz` (200 while the process serves) and `/readyz` (200 once the dataset is loaded and clients are accepted, 503 before, during loading and while shutting down). 0 (the default) opens nothing. CONFIG SET opens the new port first, then closes the old one; a port that cannot be bound is refused (`Unable to listen on this port. Check server logs.`). No authentication: keep it on a private address."},
		{Name: "metrics-bind", Type: String, Default: "127.0.0.1", Mutable: true, Parse: parseMetricsBind, Group: "metrics",
			Doc: "The one address the metrics listener binds: an IP address, `*` (0.0.0.0) or `::*` (::) for every address. Loopback by default, like `bind`: the metrics carry limiter names and command counts. CONFIG SET moves an open listener (new address first, then the old one is closed)."},

		// Envoy rate limit service (docs/envoy.md, internal/rls, internal/server/rls.go)
		{Name: "rls-port", Type: Int, Default: "0", Min: 0, Max: 65535, Group: "envoy",
			Doc: "gRPC port of the built-in Envoy global rate limit service (`envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`, docs/envoy.md); 0 (the default) opens nothing. Needs `rls-config`. Set at startup only."},
		{Name: "rls-bind", Type: String, Default: "", Parse: parseRLSBind, Group: "envoy",
			Doc: "The one address the rate limit service binds: an IP address, `*` (0.0.0.0) or `::*` (::). Empty (the default) listens on every `bind` address. Set at startup only."},
		{Name: "rls-config", Type: String, Default: "", Mutable: true, Group: "envoy",
			Doc: "Descriptor configuration of the rate limit service, in envoyproxy/ratelimit's YAML format (plus `algorithm` and `burst`, docs/envoy.md): a file (several domains as `---` documents) or a directory whose `*.yaml`/`*.yml` files are all loaded. CONFIG SET loads the new file first and refuses a file that cannot be used with an error naming the file, the line and the problem, keeping the configuration in use; `RLS RELOAD` and SIGHUP read the file again."},
		{Name: "rls-tls", Type: Bool, Default: "no", Group: "envoy",
			Doc: "Serve the rate limit service (and its health service) over TLS, with the server's `tls-*` settings: `tls-cert-file` and `tls-key-file`, client certificates as `tls-auth-clients` says (verified against `tls-ca-cert-file`/`tls-ca-cert-dir`), `tls-protocols`, `tls-ciphers`. Needs no `tls-port`. A `CONFIG SET` of a `tls-*` directive applies to new connections here too. Set at startup only."},
		{Name: "rls-forward", Type: Bool, Default: "yes", Mutable: true, Group: "envoy",
			Doc: "Relay a decision this node cannot make to the node that can, and answer with its result: a Raft follower relays to its leader, a shard to the shard that owns the descriptor's key (the MOVED it would answer names the node), over the client port as a cluster member (`masteruser`/`masterauth`, as slot moves do). Envoy can then send every call to any node. `no` answers gRPC `UNAVAILABLE` instead, and Envoy applies its failure mode."},
		{Name: "rls-response-headers", Type: Bool, Default: "yes", Mutable: true, Group: "envoy",
			Doc: "Add envoyproxy/ratelimit's `x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset` headers to every answer with a limit (its RESPONSE_HEADERS_ENABLED, which is off by default there); Envoy forwards them to the client."},

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
			Doc: "Write the process id to this file at start and remove it at shutdown. With `daemonize yes` and no pidfile set, `/var/run/hotkv.pid` is used, as Redis uses /var/run/redis.pid."},
		{Name: "daemonize", Type: Bool, Default: "no", Group: "general",
			Doc: "Run in the background, as Redis does: the command starts the server as a new process in its own session (standard input, output and error on /dev/null, so log to `logfile`) and exits at once with status 0. The server writes `pidfile`. Under a service manager leave it `no` (deploy/hotkv.service does)."},
		{Name: "shutdown-on-sigterm", Type: Special, Default: "default", Mutable: true, Parse: parseShutdownOnSig, Group: "general",
			Doc: "What SIGTERM does, as the flags of SHUTDOWN: `default` (save if save points are configured), `save` (always save), `nosave` (never), `force` (exit even if that save fails; without it a failed save keeps the server running), and `now` (accepted: HotKV has no lagging replicas to wait for). Flags combine, as `nosave now`; `save` and `nosave` exclude each other."},
		{Name: "shutdown-on-sigint", Type: Special, Default: "default", Mutable: true, Parse: parseShutdownOnSig, Group: "general",
			Doc: "What SIGINT (Ctrl-C) does, with `shutdown-on-sigterm`'s flags. Whatever it says, a second SIGINT after a failed shutdown exits at once without saving."},
		{Name: "oom-score-adj", Type: Enum, Default: "no", Values: []string{"no", "yes", "relative", "absolute"}, Mutable: true, Group: "general",
			Doc: "Set the Linux OOM killer's score of the process (/proc/self/oom_score_adj) from `oom-score-adj-values`, as Redis does: `no` leaves it (and puts back the score the process had before HotKV changed it), `yes` or `relative` adds the value to that score, `absolute` writes the value itself; the result is kept within -1000..1000. HotKV uses the first (primary's) value: a Raft follower may lead at any moment, and HotKV forks no child. Lowering the score needs CAP_SYS_RESOURCE; a CONFIG SET that cannot write it fails (`Failed to set current oom_score_adj. Check server logs.`), a start only logs it."},
		{Name: "oom-score-adj-values", Type: Special, Default: "0 200 800", Mutable: true, Parse: parseOOMValues, Group: "general",
			Doc: "Three scores for `oom-score-adj`, each between -2000 and 2000: Redis's primary, replica and background child. HotKV applies the first."},
		{Name: "supervised", Type: Enum, Default: "no", Values: []string{"upstart", "systemd", "auto", "no"}, Group: "general",
			Doc: "Tell a service manager how startup goes, as Redis does. `systemd`: sd_notify messages on `NOTIFY_SOCKET` (`STATUS=` lines with the loading progress, `READY=1` once the data is loaded and the listeners are open, `STOPPING=1` at shutdown), for a `Type=notify` unit such as deploy/hotkv.service. `upstart`: the server stops itself with SIGSTOP when ready (`expect stop`). `auto`: upstart if `UPSTART_JOB` is set, else systemd if `NOTIFY_SOCKET` is set. `no`: none."},
		{Name: "enable-debug-command", Type: Enum, Default: "no", Values: []string{"no", "yes", "local"}, Group: "general",
			Doc: "Allow DEBUG (including DEBUG CLOCK, which tests use to control time): `yes` for every client, `local` for loopback and unix-socket clients only."},
		{Name: "active-expire-effort", Type: Int, Default: "1", Min: 1, Max: 10, Mutable: true, Group: "general",
			Doc: "Share of CPU the active expiry cycle may use: 1 allows 25% of a core, each step up adds 25% more time per cycle."},
		// Memory limits (docs/security.md, "Memory limits")
		{Name: "maxmemory", Type: Memory, Default: "0", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "memory",
			Doc: "Memory limit in bytes (Redis's units: `100mb`, `1gb` ...); 0 means no limit. Used memory is estimated from the Go heap, sampled every millisecond, and the writes admitted since the last garbage collection (docs/security.md, \"Memory limits\"). Over the limit, every command first evicts keys by `maxmemory-policy`; a command flagged `denyoom` (and anything queued in MULTI) is refused with `OOM command not allowed when used memory > 'maxmemory'.` when eviction cannot get under it."},
		{Name: "maxmemory-policy", Type: Enum, Default: "noeviction", Values: []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}, Mutable: true, Group: "memory",
			Doc: "Which keys go when used memory is over `maxmemory`: `allkeys-*` any key, `volatile-*` only keys with a TTL; `lru` least recently used (approximated with a pool of `maxmemory-samples` sampled keys, as Redis), `lfu` least frequently used (Redis's logarithmic counter), `random`, `ttl` nearest expiry; `noeviction` evicts nothing and refuses writes. Rate-limit state keys (GCRA, CL.THROTTLE) are keys like any other: an `allkeys-*` policy can evict them, which resets their limit."},
		{Name: "maxmemory-samples", Type: Int, Default: "5", Min: 1, Max: 1<<31 - 1, Mutable: true, Group: "memory",
			Doc: "Keys sampled per database (from one random shard) each time the LRU, LFU and TTL policies look for the best key to evict: more is closer to exact and slower."},
		{Name: "maxmemory-eviction-tenacity", Type: Int, Default: "10", Min: 0, Max: 100, Mutable: true, Group: "memory",
			Doc: "How long one command may spend evicting before it goes ahead anyway (the next command carries on): 0 to 10 is 0 to 500 microseconds, then 15% more per step, 100 without limit. Redis's scale."},
		{Name: "lfu-log-factor", Type: Int, Default: "10", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "memory",
			Doc: "How slowly the LFU counter (0 to 255) grows: an access increments it with probability 1/((counter-5) x factor + 1), as in Redis. With 10, about a million accesses reach 255."},
		{Name: "lfu-decay-time", Type: Int, Default: "1", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "memory",
			Doc: "Minutes after which an idle key's LFU counter drops by one (per period elapsed); 0 never decays."},
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
			Doc: "Most members a set whose members are all integers keeps in its compact encoding (OBJECT ENCODING `intset`: a sorted array of 2-, 4- or 8-byte integers, as narrow as its members allow, listed in numeric order). A set that grows past it, or gets a member that is not an integer, becomes a hash table (`hashtable`) and stays one. Values above 2^30 count as 2^30, as in Redis."},
		{Name: "hll-sparse-max-bytes", Type: Memory, Default: "3000", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Longest a HyperLogLog may grow in its sparse encoding (run-length opcodes, compact while few registers are set). An update that would take it past this turns it dense (12304 bytes, fixed), and it stays dense. Redis's default and format: the bytes are the same as Redis's for the same setting."},
		{Name: "list-max-listpack-size", Aliases: []string{"list-max-ziplist-size"}, Type: Int, Default: "-2", Min: -(1 << 31), Max: 1<<31 - 1, Mutable: true, Group: "data types",
			Doc: "Redis's quicklist node size (negative: -1 to -5 for 4 to 64 KiB; positive: a number of elements). A list that fits one such node is kept packed (one allocation, a few bytes per element); a longer one becomes a ring buffer of elements and stays one. OBJECT ENCODING says `quicklist` either way, as Redis 7.0 does."},
		{Name: "list-compress-depth", Type: Int, Default: "0", Min: 0, Max: 1<<31 - 1, Mutable: true, Group: "data types",
			Doc: "Redis's quicklist compression depth. Accepted for compatibility and reported by CONFIG GET; HotKV does not compress lists, so it changes nothing."},
		{Name: "stream-node-max-bytes", Type: Memory, Default: "4096", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Most bytes a stream packs into one node of entries (Redis's listpack) before XADD opens a new one; 0 means no limit (1 GiB). Approximate trimming (`~`) removes whole nodes only."},
		{Name: "stream-node-max-entries", Type: Int, Default: "100", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "data types",
			Doc: "Most entries (deleted ones included) one stream node holds before XADD opens a new one; 0 means no limit. It also sets the default LIMIT of approximate trimming (100 nodes' worth)."},
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
		{Name: "stop-writes-on-bgsave-error", Type: Bool, Default: "yes", Mutable: true, Group: "persistence",
			Doc: "While save points are configured and the last background save failed, refuse write commands (and PING) with Redis's `-MISCONF` error, so that writes do not pile up unsaved unnoticed; reads go on. A successful save (BGSAVE, SAVE, a save point) lifts it, as does `no`. An append-only log that cannot be written refuses writes the same way, whatever this says (`-MISCONF Errors writing to the AOF file: ...`), until a write succeeds again."},
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
		// Replication (docs/replication.md)
		{Name: "raft-port", Type: Int, Default: "0", Min: 0, Max: 65535, Group: "replication",
			Doc: "TCP port of this node's Raft transport. 0 (the default) runs a standalone server and nothing below applies. Any other port makes the node a member of a Raft group: writes are replicated to a majority before they are acknowledged, the Raft log replaces the append-only log (`appendonly` is ignored) and the dataset is rebuilt from the group's snapshots and log at startup, never from `dbfilename`."},
		{Name: "raft-announce-ip", Type: String, Default: "127.0.0.1", Group: "replication",
			Doc: "Address the other members dial for this node's Raft port, and that followers name in `-MOVED` replies when this node leads. The Raft transport listens on it."},
		{Name: "raft-node-id", Type: String, Default: "", Group: "replication",
			Doc: "This node's id in its group (`RAFT ADD id ...`); it must never change for a `raft-dir`. Empty: `<raft-announce-ip>:<raft-port>`."},
		{Name: "raft-peer-addr", Type: Special, Default: "", Accumulate: true, Parse: parsePeerAddrs, Group: "replication",
			Doc: "`<node-id> <host:port>`: dial member `node-id` at this address instead of the Raft address in the group's configuration (which stays the same on every node). Repeat the line (or list several pairs) for several members; members without one are dialled at their configured address. For a NAT or tunnel in front of a member, and for the failover tests, which route every node-to-node link through a fault proxy (docs/testing.md). Read at startup."},
		{Name: "masteruser", Type: String, Default: "", Mutable: true, Group: "replication",
			Doc: "In Raft mode, the user a follower authenticates as when it announces its client address to the leader (`RAFT ANNOUNCE`, docs/replication.md), as a Redis replica authenticates to its master. Empty: the `default` user. The user needs `+raft|announce`."},
		{Name: "masterauth", Type: String, Default: "", Mutable: true, Group: "replication",
			Doc: "In Raft mode, the password a follower gives the leader with `masteruser` when it announces its client address. Empty: this node's own `requirepass` (the members of a group usually share it); no AUTH when that is empty too."},
		{Name: "raft-bootstrap", Type: Bool, Default: "no", Group: "replication",
			Doc: "Start a new group whose only voter is this node, if `raft-dir` holds no Raft state yet (the same as `RAFT BOOTSTRAP`). Other nodes join with `RAFT ADD` sent to the leader."},
		{Name: "raft-dir", Type: String, Default: "raft", Protected: true, Group: "replication",
			Doc: "Directory (inside `dir` when relative) holding the Raft log (`wal/`) and snapshots (`snapshots/`)."},
		{Name: "replication-ack", Type: Enum, Default: "quorum", Values: []string{"quorum", "leader"}, Group: "replication",
			Doc: "When a write is acknowledged. `quorum`: after the Raft entry holding its effects is committed (stored on a majority) and applied; no acknowledged write is lost on failover. `leader`: as soon as the leader has run it and queued its effects for the log, before the commit: lower latency, but writes acknowledged in the last moments before a leader fails or is cut off (up to the leader lease plus the replication lag) can be lost, so a limit can over-admit by that much (docs/replication.md)."},
		{Name: "raft-heartbeat-timeout", Type: Int, Default: "500", Min: 5, Max: 60000, Group: "replication",
			Doc: "Milliseconds a follower waits without hearing from the leader before it starts an election (hashicorp/raft's HeartbeatTimeout; LAN value of the design, default 1000 there). The leader's lease is half of it."},
		{Name: "raft-election-timeout", Type: Int, Default: "500", Min: 5, Max: 60000, Group: "replication",
			Doc: "Milliseconds a candidate waits for votes before it starts a new election (hashicorp/raft's ElectionTimeout)."},
		{Name: "raft-commit-timeout", Type: Int, Default: "5", Min: 1, Max: 60000, Group: "replication",
			Doc: "Milliseconds of idle time after which the leader tells followers the commit index (hashicorp/raft's CommitTimeout): lower means fresher follower state."},
		{Name: "raft-inflight-batches", Type: Int, Default: "1", Min: 1, Max: 64, Group: "replication",
			Doc: "How many batches of effects the leader may have proposed to Raft and not yet committed. While they commit, the next batch collects every write that arrives (with no added delay: a lone write is proposed at once). 1 makes the fewest, largest entries, which used the least CPU per write and gave the most throughput when a whole group shares one machine; more lets the leader write one entry to its log while the followers store the previous one, which can pay when the round trip to them is long (docs/replication.md)."},
		{Name: "raft-snapshot-interval", Type: Int, Default: "10000", Min: 10, Max: 1 << 40, Group: "replication",
			Doc: "Milliseconds between checks whether `raft-snapshot-threshold` entries have accumulated (hashicorp/raft's SnapshotInterval, randomized up to twice this)."},
		{Name: "raft-snapshot-threshold", Type: Int, Default: "8192", Min: 16, Max: 1 << 40, Group: "replication",
			Doc: "Number of Raft entries (each a batch of effects) after which a node snapshots its state and compacts the log before it. A follower snapshots at once; the leader, which must pause keyspace commands while it encodes its snapshot, also waits until the log written since its last snapshot is at least as large as that snapshot (docs/replication.md, \"Snapshots\")."},
		{Name: "raft-snapshot-log-bytes", Type: Memory, Default: "67108864", Min: 1 << 20, Max: 1<<63 - 1, Mutable: true, Group: "replication",
			Doc: "A node also snapshots once the log since its last snapshot holds this many bytes of effects (and is at least as large as that snapshot), however few entries that is: entries range from one write to thousands, so `raft-snapshot-threshold` alone does not bound the log a restarting node must replay (docs/replication.md, \"Snapshots\")."},
		{Name: "raft-trailing-logs", Type: Int, Default: "1024", Min: 0, Max: 1 << 40, Group: "replication",
			Doc: "Raft entries kept in the log after a snapshot compacts it (hashicorp/raft's TrailingLogs): a follower that lags by fewer catches up from the log, one that lags by more gets the whole snapshot."},
		// Sharding (docs/cluster.md)
		{Name: "cluster-enabled", Type: Bool, Default: "no", Group: "cluster",
			Doc: "Make this node part of a sharded cluster: its Raft group (`raft-port`, required) is one shard, owning the slots the cluster's slot map gives it, and the node also runs a member of the meta group that replicates the slot map (docs/cluster.md). Commands on keys of other shards' slots answer `-MOVED` to them. `no`: a single group owns every slot."},
		{Name: "cluster-shard-id", Type: String, Default: "", Group: "cluster",
			Doc: "The shard (Raft group) this node belongs to, the same on every member of the group; required with `cluster-enabled`."},
		{Name: "cluster-meta-port", Type: Int, Default: "0", Min: 0, Max: 65535, Group: "cluster",
			Doc: "TCP port of this node's meta group Raft transport, on `raft-announce-ip`. 0: `raft-port` + 10000 (as Redis's cluster bus port is the client port + 10000)."},
		{Name: "cluster-meta-bootstrap", Type: Bool, Default: "no", Group: "cluster",
			Doc: "Start a new cluster (a meta group whose only voter is this node) if this node has no meta state yet: the same as `CLUSTERX BOOTSTRAP`. Every other node joins with `CLUSTERX JOIN`."},
		{Name: "cluster-meta-voters", Type: Int, Default: "3", Min: 1, Max: 9, Group: "cluster",
			Doc: "How many nodes vote in the meta group: the first nodes to join vote, later ones receive the slot map without voting (Raft non-voters). 3 survives the loss of one, 5 of two."},
		// Pub/sub and client-side caching
		{Name: "notify-keyspace-events", Type: Special, Default: "", Mutable: true, Parse: parseNotifyKeyspaceEvents, Group: "pubsub",
			Doc: "Keyspace events to publish, as Redis's letters: `K` (`__keyspace@<db>__:<key>` channels), `E` (`__keyevent@<db>__:<event>`), and the classes `g` generic, `$` string, `l` list, `s` set, `h` hash, `z` sorted set, `x` expired, `e` evicted, `t` stream, `m` key miss, `d` module, `n` new key, `A` (`g$lshzxetd`). Empty (the default) publishes none, and then a write pays one atomic load for them. CONFIG GET reports Redis's canonical order (`AKE` for `KEA`)."},
		{Name: "client-output-buffer-limit", Type: Special, Default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", Mutable: true,
			Merge: mergeOutputBufferLimits, Group: "pubsub",
			Doc: "`<class> <hard> <soft> <soft-seconds>` groups, for the classes `normal`, `replica` (or `slave`) and `pubsub`; a value names only the classes it changes. A client whose unsent output (replies and pushes waiting for it to read) reaches `hard` bytes, or stays at or above `soft` bytes for more than `soft-seconds`, is disconnected; 0 disables a bound. A client subscribed to any channel is of class `pubsub`: a slow subscriber is dropped instead of growing the server's memory, and publishers never wait for it. Redis's defaults and CONFIG GET format."},
		{Name: "tracking-table-max-keys", Type: Int, Default: "1000000", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "pubsub",
			Doc: "Most keys the client-side caching table (CLIENT TRACKING, default mode) remembers; past it, random keys are dropped and their clients told to invalidate them, as if the keys changed. 0 means no limit."},
		{Name: "lazyfree-lazy-user-flush", Type: Bool, Default: "no", Mutable: true, Group: "general",
			Doc: "Make FLUSHALL/FLUSHDB without SYNC or ASYNC free memory in the background."},
		{Name: "busy-reply-threshold", Aliases: []string{"lua-time-limit"}, Type: Int, Default: "5000", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "general",
			Doc: "Milliseconds a Lua script (EVAL, FCALL) may run before other clients' commands get `-BUSY` instead of waiting, and SCRIPT KILL or FUNCTION KILL may stop it; 0 never. The script itself keeps running until it ends or is killed."},

		// Introspection (docs/operations.md#introspection)
		{Name: "slowlog-log-slower-than", Type: Int, Default: "10000", Min: -1, Max: 1<<63 - 1, Mutable: true, Group: "introspection",
			Doc: "Commands that take at least this many microseconds go into the slow log (SLOWLOG GET); -1 disables the log, 0 logs every command."},
		{Name: "slowlog-max-len", Type: Int, Default: "128", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "introspection",
			Doc: "Most entries the slow log keeps; the oldest go first. Lowering it drops the excess at once."},
		{Name: "latency-monitor-threshold", Type: Int, Default: "0", Min: 0, Max: 1<<63 - 1, Mutable: true, Group: "introspection",
			Doc: "Events (commands, active expiry cycles) that take at least this many milliseconds are recorded for LATENCY LATEST, HISTORY, GRAPH and DOCTOR; 0 turns the latency monitor off."},
		{Name: "latency-tracking", Type: Bool, Default: "yes", Mutable: true, Group: "introspection",
			Doc: "Keep a latency histogram per command (LATENCY HISTOGRAM, INFO latencystats): one atomic add per command."},
		{Name: "latency-tracking-info-percentiles", Type: Special, Default: "50 99 99.9", Mutable: true, Parse: parsePercentiles, Group: "introspection",
			Doc: "Percentiles INFO latencystats reports per command, separated by spaces, each from 0 to 100; empty reports none."},
	}
}

// shutdownFlags are SHUTDOWN's flags as shutdown-on-sigterm and -sigint take them, in Redis's
// order (which is also the order CONFIG GET lists them in).
var shutdownFlags = []string{"save", "nosave", "now", "force"}

// parseShutdownOnSig checks shutdown-on-sigterm and -sigint as Redis's multi-argument enum
// does, and writes the flags in Redis's order ("default" when there are none).
func parseShutdownOnSig(v string) (string, error) {
	set := map[string]bool{}
	words := strings.Fields(strings.ToLower(v))
	for _, w := range words {
		if w != "default" && !slices.Contains(shutdownFlags, w) {
			words = nil
			break
		}
		set[w] = true
	}
	if len(words) == 0 {
		return "", errors.New("argument(s) must be one of the following: default, save, nosave, now, force")
	}
	if set["save"] && set["nosave"] {
		return "", errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
	}
	var out []string
	for _, f := range shutdownFlags {
		if set[f] {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "default", nil
	}
	return strings.Join(out, " "), nil
}

// ShutdownOnSig reads a normalized shutdown-on-sig* value: whether it asks to save, not to
// save (neither: SHUTDOWN's default) and to exit even when the save fails.
func ShutdownOnSig(v string) (save, nosave, force bool) {
	for _, f := range strings.Fields(v) {
		switch f {
		case "save":
			save = true
		case "nosave":
			nosave = true
		case "force":
			force = true
		}
	}
	return save, nosave, force
}

// parseOOMValues checks oom-score-adj-values as Redis does: three integers in -2000..2000.
func parseOOMValues(v string) (string, error) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return "", errors.New("wrong number of arguments")
	}
	for _, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < -2000 || n > 2000 {
			return "", errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
	}
	return strings.Join(f, " "), nil
}

// parsePercentiles checks latency-tracking-info-percentiles as Redis does and writes the
// numbers as Redis prints them (trimmed: 50, 99.9).
func parsePercentiles(v string) (string, error) {
	f := strings.Fields(v)
	out := make([]string, len(f))
	for i, s := range f {
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || p != p {
			return "", errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if p > 100 || p < 0 {
			return "", errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		out[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(out, " "), nil
}

// Percentiles parses a normalized latency-tracking-info-percentiles value.
func Percentiles(v string) []float64 {
	var out []float64
	for _, s := range strings.Fields(v) {
		if p, err := strconv.ParseFloat(s, 64); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func parseBind(v string) (string, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return "", errors.New("Too many bind addresses specified.")
	}
	for _, f := range fields {
		addr := strings.TrimPrefix(f, "-")
		if addr == "*" || addr == "::*" { // every IPv4 / every IPv6 address, as Redis
			continue
		}
		if net.ParseIP(addr) == nil {
			return "", errors.New("Invalid bind address '" + f + "'")
		}
	}
	return strings.Join(fields, " "), nil
}

// parseOctalPerm accepts file permission bits written in octal, 0 to 777, as Redis's
// OCTAL_CONFIG does, and keeps them in octal so CONFIG GET shows what was written.
func parseOctalPerm(v string) (string, error) {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return "", errors.New("argument must be an octal number between 0 and 777")
	}
	return strconv.FormatUint(n, 8), nil
}

// parseMetricsBind checks metrics-bind: a single IP address, or `*` / `::*` for every IPv4 /
// IPv6 address as in `bind`. One address is enough for a scrape target, and a list would make
// a partly failed CONFIG SET ambiguous.
func parseMetricsBind(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "*" || v == "::*" || net.ParseIP(v) != nil {
		return v, nil
	}
	return "", errors.New("Invalid metrics-bind address '" + v + "': an IP address, * or ::*")
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

// parsePeerAddrs checks raft-peer-addr: pairs of a node id and a host:port, each id once.
func parsePeerAddrs(v string) (string, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "", errors.New("raft-peer-addr takes pairs of <node-id> <host:port>")
	}
	seen := map[string]bool{}
	for i := 0; i < len(f); i += 2 {
		if seen[f[i]] {
			return "", errors.New("raft-peer-addr names node " + f[i] + " twice")
		}
		seen[f[i]] = true
		host, port, err := net.SplitHostPort(f[i+1])
		if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return "", errors.New("raft-peer-addr: " + f[i+1] + " is not a host:port")
		}
	}
	return strings.Join(f, " "), nil
}

// PeerAddrs turns a raft-peer-addr value into node id -> address (nil when empty).
func PeerAddrs(v string) map[string]string {
	f := strings.Fields(v)
	if len(f) < 2 {
		return nil
	}
	m := make(map[string]string, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m
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

// parseRLSBind checks rls-bind: empty (the bind addresses), `*`, `::*` or one IP address.
func parseRLSBind(v string) (string, error) {
	if v = strings.TrimSpace(v); v == "" || v == "*" || v == "::*" || net.ParseIP(v) != nil {
		return v, nil
	}
	return "", errors.New("Invalid rls-bind address '" + v + "': an IP address, * or ::*")
}

// parseNotifyKeyspaceEvents checks notify-keyspace-events as Redis does and returns its
// canonical form, which CONFIG GET reports.
func parseNotifyKeyspaceEvents(v string) (string, error) {
	flags, ok := pubsub.ParseEvents(v)
	if !ok {
		return "", errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
	}
	return pubsub.FormatEvents(flags), nil
}

// obufClasses are client-output-buffer-limit's classes in Redis's order and CONFIG GET names.
var obufClasses = []string{"normal", "slave", "pubsub"}

// mergeOutputBufferLimits applies a client-output-buffer-limit value to the current one as
// Redis's updateClientOutputBufferLimit: groups of four (class, hard, soft, soft-seconds),
// every group checked before any applies, and only the classes named change. The result
// always names all three classes, as CONFIG GET prints them.
func mergeOutputBufferLimits(current, v string) (string, error) {
	limits := OutputBufferLimits(current)
	args := strings.Fields(v)
	if len(args)%4 != 0 {
		return "", errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	for j := 0; j < len(args); j += 4 {
		class := -1
		switch strings.ToLower(args[j]) {
		case "normal":
			class = 0
		case "slave", "replica":
			class = 1
		case "pubsub":
			class = 2
		}
		if class < 0 {
			return "", errors.New("Invalid client class specified in buffer limit configuration.")
		}
		hard, okHard := ParseMemory(args[j+1])
		soft, okSoft := ParseMemory(args[j+2])
		secs, err := strconv.ParseInt(args[j+3], 10, 64)
		if !okHard || !okSoft || err != nil || secs < 0 {
			return "", errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		limits[class] = [3]int64{hard, soft, secs}
	}
	parts := make([]string, 0, 12)
	for i, l := range limits {
		parts = append(parts, obufClasses[i], strconv.FormatInt(l[0], 10), strconv.FormatInt(l[1], 10), strconv.FormatInt(l[2], 10))
	}
	return strings.Join(parts, " "), nil
}

// OutputBufferLimits reads a normalized client-output-buffer-limit value: hard, soft and
// soft-seconds for the normal, replica and pubsub classes.
func OutputBufferLimits(v string) [3][3]int64 {
	var out [3][3]int64
	f := strings.Fields(v)
	for j := 0; j+3 < len(f); j += 4 {
		for i, name := range obufClasses {
			if f[j] == name {
				for k := 0; k < 3; k++ {
					out[i][k], _ = strconv.ParseInt(f[j+1+k], 10, 64)
				}
			}
		}
	}
	return out
}
