package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// redis70Directives are the names in Redis 7.0's configuration table (src/config.c of Redis
// 7.0.15, the release the compatibility suite runs against).
var redis70Directives = strings.Fields(`
		acl-pubsub-default aclfile acllog-max-len active-defrag-cycle-max active-defrag-cycle-min
		active-defrag-ignore-bytes active-defrag-max-scan-fields active-defrag-threshold-lower
		active-defrag-threshold-upper active-expire-effort activedefrag activerehashing
		always-show-logo aof-disable-auto-gc aof-load-truncated aof-rewrite-incremental-fsync
		aof-timestamp-enabled aof-use-rdb-preamble aof_rewrite_cpulist appenddirname appendfilename
		appendfsync appendonly auto-aof-rewrite-min-size auto-aof-rewrite-percentage bgsave_cpulist
		bind bind-source-addr bio_cpulist busy-reply-threshold client-output-buffer-limit
		client-query-buffer-limit cluster-allow-pubsubshard-when-down cluster-allow-reads-when-down
		cluster-allow-replica-migration cluster-announce-bus-port cluster-announce-hostname
		cluster-announce-ip cluster-announce-port cluster-announce-tls-port cluster-config-file
		cluster-enabled cluster-link-sendbuf-limit cluster-migration-barrier cluster-node-timeout
		cluster-port cluster-preferred-endpoint-type cluster-replica-no-failover
		cluster-replica-validity-factor cluster-require-full-coverage crash-log-enabled
		crash-memcheck-enabled daemonize databases dbfilename dir disable-thp dynamic-hz
		enable-debug-command enable-module-command enable-protected-configs hash-max-listpack-entries
		hash-max-listpack-value hll-sparse-max-bytes hz ignore-warnings io-threads io-threads-do-reads
		jemalloc-bg-thread key-load-delay latency-monitor-threshold latency-tracking
		latency-tracking-info-percentiles lazyfree-lazy-eviction lazyfree-lazy-expire
		lazyfree-lazy-server-del lazyfree-lazy-user-del lazyfree-lazy-user-flush lfu-decay-time
		lfu-log-factor list-compress-depth list-max-listpack-size
		loading-process-events-interval-bytes logfile loglevel lua-enable-deprecated-api masterauth
		masteruser maxclients maxmemory maxmemory-clients maxmemory-eviction-tenacity maxmemory-policy
		maxmemory-samples min-replicas-max-lag min-replicas-to-write no-appendfsync-on-rewrite
		notify-keyspace-events oom-score-adj oom-score-adj-values pidfile port proc-title-template
		propagation-error-behavior protected-mode proto-max-bulk-len rdb-del-sync-files
		rdb-key-save-delay rdb-save-incremental-fsync rdbchecksum rdbcompression repl-backlog-size
		repl-backlog-ttl repl-disable-tcp-nodelay repl-diskless-load repl-diskless-sync
		repl-diskless-sync-delay repl-diskless-sync-max-replicas repl-ping-replica-period repl-timeout
		replica-announce-ip replica-announce-port replica-announced replica-ignore-disk-write-errors
		replica-ignore-maxmemory replica-lazy-flush replica-priority replica-read-only
		replica-serve-stale-data replicaof requirepass sanitize-dump-payload save server_cpulist
		set-max-intset-entries set-proc-title shutdown-on-sigint shutdown-on-sigterm shutdown-timeout
		slowlog-log-slower-than slowlog-max-len socket-mark-id stop-writes-on-bgsave-error
		stream-node-max-bytes stream-node-max-entries supervised syslog-enabled syslog-facility
		syslog-ident tcp-backlog tcp-keepalive timeout tls-auth-clients tls-ca-cert-dir
		tls-ca-cert-file tls-cert-file tls-ciphers tls-ciphersuites tls-client-cert-file
		tls-client-key-file tls-client-key-file-pass tls-cluster tls-dh-params-file tls-key-file
		tls-key-file-pass tls-port tls-prefer-server-ciphers tls-protocols tls-replication
		tls-session-cache-size tls-session-cache-timeout tls-session-caching tracking-table-max-keys
		unixsocket unixsocketperm use-exit-on-panic watchdog-period zset-max-listpack-entries
		zset-max-listpack-value`)

// Every directive of Redis 7.0 is known to HotKV, by name or alias, so that a redis.conf that
// sets any of them loads (implemented, inert or refused with a reason, never "Bad directive").
func TestEveryRedis70DirectiveIsKnown(t *testing.T) {
	c := New(Directives())
	for _, name := range redis70Directives {
		if c.Lookup(name) == nil {
			t.Errorf("%s: unknown", name)
		}
	}
	seen := map[string]bool{}
	for _, d := range c.Table() {
		for _, n := range append([]string{d.Name}, d.Aliases...) {
			if seen[n] {
				t.Errorf("%s: declared twice", n)
			}
			seen[n] = true
		}
		if d.Inert && d.Unsupported != "" {
			t.Errorf("%s: both inert and unsupported", d.Name)
		}
		if (d.Inert || d.Unsupported != "") && d.Doc == "" {
			t.Errorf("%s: no doc saying why it changes nothing", d.Name)
		}
	}
}

// The settings of the redis.conf that Redis 7.0 ships (every line of it that is not a comment,
// as Debian installs it) load, and the ones HotKV ignores are listed for the startup warning.
func TestRedis70ConfFileLoads(t *testing.T) {
	conf := `bind 127.0.0.1 -::1
protected-mode yes
port 6379
tcp-backlog 511
timeout 0
tcp-keepalive 300
daemonize yes
pidfile /run/redis/redis-server.pid
loglevel notice
logfile /var/log/redis/redis-server.log
databases 16
always-show-logo no
set-proc-title yes
proc-title-template "{title} {listen-addr} {server-mode}"
stop-writes-on-bgsave-error yes
rdbcompression yes
rdbchecksum yes
dbfilename dump.rdb
rdb-del-sync-files no
dir /var/lib/redis
replica-serve-stale-data yes
replica-read-only yes
repl-diskless-sync yes
repl-diskless-sync-delay 5
repl-diskless-sync-max-replicas 0
repl-diskless-load disabled
repl-disable-tcp-nodelay no
replica-priority 100
acllog-max-len 128
lazyfree-lazy-eviction no
lazyfree-lazy-expire no
lazyfree-lazy-server-del no
replica-lazy-flush no
lazyfree-lazy-user-del no
lazyfree-lazy-user-flush no
oom-score-adj no
oom-score-adj-values 0 200 800
disable-thp yes
appendonly no
appendfilename "appendonly.aof"
appenddirname "appendonlydir"
appendfsync everysec
no-appendfsync-on-rewrite no
auto-aof-rewrite-percentage 100
auto-aof-rewrite-min-size 64mb
aof-load-truncated yes
aof-use-rdb-preamble yes
aof-timestamp-enabled no
slowlog-log-slower-than 10000
slowlog-max-len 128
latency-monitor-threshold 0
notify-keyspace-events ""
hash-max-listpack-entries 512
hash-max-listpack-value 64
list-max-listpack-size -2
list-compress-depth 0
set-max-intset-entries 512
zset-max-listpack-entries 128
zset-max-listpack-value 64
hll-sparse-max-bytes 3000
stream-node-max-bytes 4096
stream-node-max-entries 100
activerehashing yes
client-output-buffer-limit normal 0 0 0
client-output-buffer-limit replica 256mb 64mb 60
client-output-buffer-limit pubsub 32mb 8mb 60
hz 10
dynamic-hz yes
aof-rewrite-incremental-fsync yes
rdb-save-incremental-fsync yes
jemalloc-bg-thread yes
`
	path := filepath.Join(t.TempDir(), "redis.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Directives(), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	if c.Get("daemonize") != "yes" || c.Get("oom-score-adj-values") != "0 200 800" || c.Get("dbfilename") != "dump.rdb" {
		t.Fatalf("daemonize %q, oom-score-adj-values %q, dbfilename %q", c.Get("daemonize"), c.Get("oom-score-adj-values"), c.Get("dbfilename"))
	}
	// Every ignored setting of that file is at Redis's default, so none is worth a warning.
	if set := c.InertSet(); len(set) != 0 {
		t.Fatalf("inert settings reported: %v", set)
	}
	if err := c.Set([][2]string{{"rdbcompression", "no"}, {"lazyfree-lazy-expire", "yes"}}, true); err != nil {
		t.Fatal(err)
	}
	if set := strings.Join(c.InertSet(), ", "); set != "rdbcompression no, lazyfree-lazy-expire yes" && set != "lazyfree-lazy-expire yes, rdbcompression no" {
		t.Fatalf("inert settings reported: %q", set)
	}
}

// Directives whose other values ask for what HotKV does not do refuse them with the reason,
// at startup and in CONFIG SET, and take their default.
func TestUnsupportedDirectivesRefuseOtherValues(t *testing.T) {
	c := New(Directives())
	for _, tc := range []struct{ name, value, reason string }{
		{"replicaof", "10.0.0.1 6379", "HotKV replicates with Raft, not REPLICAOF"},
		{"slaveof", "10.0.0.1 6379", "HotKV replicates with Raft, not REPLICAOF"},
		{"min-replicas-to-write", "1", "HotKV has no Redis replicas to count"},
		{"maxmemory-clients", "10mb", "HotKV does not evict clients"},
		{"activedefrag", "yes", "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc"},
		{"syslog-enabled", "yes", "HotKV logs to logfile or to standard output"},
		{"tls-replication", "yes", "HotKV's Raft traffic between nodes is not encrypted by HotKV"},
	} {
		err := c.Set([][2]string{{tc.name, tc.value}}, false)
		if err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s %s: %v, want %q", tc.name, tc.value, err, tc.reason)
		}
	}
	if err := c.Set([][2]string{{"maxmemory-clients", "200%"}}, true); err == nil || !strings.Contains(err.Error(), "percentage argument must be less or equal to 100") {
		t.Errorf("maxmemory-clients 200%%: %v", err)
	}
	for _, tc := range [][2]string{{"replicaof", ""}, {"min-replicas-to-write", "0"}, {"maxmemory-clients", "0"}, {"maxmemory-clients", "0%"}, {"activedefrag", "no"}} {
		if err := c.Set([][2]string{tc}, false); err != nil {
			t.Errorf("%s %q (the default): %v", tc[0], tc[1], err)
		}
	}
	// Hidden, as in Redis: only an exact CONFIG GET shows it.
	if got := c.Match([]string{"key-load-delay"}); len(got) != 1 {
		t.Errorf("CONFIG GET key-load-delay: %v", got)
	}
	for _, kv := range c.Match([]string{"*"}) {
		if kv[0] == "key-load-delay" {
			t.Error("key-load-delay in CONFIG GET *")
		}
	}
}
