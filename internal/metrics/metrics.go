// Package metrics is HotKV's Prometheus endpoint: /metrics, /healthz and /readyz on an HTTP
// handler of their own (the server opens it on metrics-port, off by default).
//
// Everything is read at scrape time from a Snapshot the server fills from the same sources INFO
// reads (internal/server/metrics.go), so serving commands pays nothing for metrics: no
// per-command counter exists only for Prometheus except the GCRA decision counts, which
// nothing else keeps. Names follow oliver006/redis_exporter wherever HotKV reports the same
// INFO field, so dashboards and alerts written for Redis work unchanged; what Redis has no
// notion of (named limiters, GCRA decisions, latency histograms) is under hotkv_.
package metrics

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source is what the endpoint reads: the server.
type Source interface {
	// MetricsSnapshot returns the current figures; called once per scrape.
	MetricsSnapshot() *Snapshot
	// Ready reports whether the server has loaded its dataset and accepts clients; when not,
	// reason says why ("loading", "starting", "shutting down") for /readyz's body.
	Ready() (ok bool, reason string)
}

// Snapshot is one scrape's worth of server figures, named after the INFO fields they come
// from.
type Snapshot struct {
	Info InstanceInfo

	UptimeSeconds    int64
	ConnectedClients int64
	BlockedClients   int64
	TrackingClients  int64
	MaxClients       int64

	UsedMemory         uint64
	UsedMemoryRSS      uint64
	UsedMemoryLua      uint64
	UsedMemoryScripts  uint64
	MaxMemory          uint64
	TotalSystemMemory  uint64
	FragmentationRatio float64

	Loading               bool
	RDBChangesSinceSave   int64
	RDBBgsaveInProgress   bool
	RDBLastSaveTime       int64
	RDBLastBgsaveOK       bool
	RDBLastBgsaveDuration int64
	AOFEnabled            bool
	AOFRewriteInProgress  bool
	AOFLastWriteOK        bool
	AOFCurrentSize        int64
	AOFBaseSize           int64
	AOFBufferLength       int64

	ConnectionsReceived   int64
	CommandsProcessed     int64
	NetInputBytes         int64
	NetOutputBytes        int64
	RejectedConnections   int64
	ExpiredKeys           int64
	ExpiredStalePercent   float64
	ExpiredTimeCapReached int64
	EvictedKeys           int64
	KeyspaceHits          int64
	KeyspaceMisses        int64
	PubSubChannels        int64
	PubSubPatterns        int64
	CPUSysSeconds         float64
	CPUUserSeconds        float64

	// DBs are the non-empty databases, as INFO keyspace lists them.
	DBs []DBStats
	// Commands are the commands (and subcommands) with any calls, as INFO commandstats.
	Commands []CommandStats
	// Errors are INFO errorstats: replies per error code.
	Errors []ErrorStats
	// Limiters are the named limiters (RATELIMIT.*), with RATELIMIT.STATS's figures.
	Limiters []LimiterStats
	// Decisions are the allowed and denied requests of GCRA.LIMIT and CL.THROTTLE.
	Decisions []DecisionStats
	// RLS are the Envoy rate limit service's per-descriptor counters (docs/envoy.md).
	RLS []RLSStats
}

// RLSStats is one descriptor key of the Envoy rate limit service, counted in hits
// (hits_addend), as envoyproxy/ratelimit's per-descriptor stats: every hit is in Total, and in
// OverLimit or WithinLimit; NearLimit hits are within the limit past 80% of it; ShadowMode
// hits are over the limit of a shadow-mode rule (in OverLimit too) and were let through.
type RLSStats struct {
	Domain, Descriptor                                   string
	Total, OverLimit, NearLimit, ShadowMode, WithinLimit uint64
}

// InstanceInfo are redis_instance_info's labels.
type InstanceInfo struct {
	Role, RedisVersion, HotKVVersion, Mode, OS, MaxmemoryPolicy, RunID, MasterReplID string
	TCPPort, ProcessID                                                               int64
}

// DBStats is one database's line of INFO keyspace.
type DBStats struct {
	Index         int
	Keys, Expires int64
}

// CommandStats is one cmdstat_ line: Name is the full name (`config|get` for a subcommand),
// as the cmd label of redis_exporter.
type CommandStats struct {
	Name                  string
	Calls, Usec           int64
	RejectedCalls, Failed int64
	// Latency, when not nil, is exported as the hotkv_command_duration_seconds histogram.
	Latency *Histogram
}

// Histogram is a latency distribution in the form prometheus.MustNewConstHistogram takes:
// Buckets maps each upper bound in seconds to the cumulative count of observations at or
// below it; Count and SumSeconds cover every observation.
type Histogram struct {
	Count      uint64
	SumSeconds float64
	Buckets    map[float64]uint64
}

// ErrorStats is one errorstat_ line.
type ErrorStats struct {
	Code  string
	Count int64
}

// LimiterStats is one named limiter: RATELIMIT.STATS's total_allowed, total_denied (units,
// not requests) and unique_keys.
type LimiterStats struct {
	Name            string
	Algo            string
	Allowed, Denied int64
	// ShadowDenied are the denied units a shadow-mode limiter let through (included in Denied).
	ShadowDenied int64
	Keys         int64
}

// DecisionStats counts one rate-limit command's decisions.
type DecisionStats struct {
	Command         string
	Allowed, Denied uint64
}

// Handler serves /metrics (a registry of its own holding the server's collector plus Go's
// runtime and process collectors; never the global registry, so in-process servers in tests
// do not share metrics), /healthz and /readyz.
func Handler(src Source) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newCollector(src),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A collector error should cost that metric, not the whole scrape.
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ok, reason := src.Ready(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(reason + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// scalar is a metric without labels, read from one Snapshot field.
type scalar struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	get  func(*Snapshot) float64
}

func b01(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// collector turns a Snapshot into metrics. Its descriptors are fixed, so the registry checks
// every scrape against them.
type collector struct {
	src     Source
	scalars []scalar

	up, instanceInfo                              *prometheus.Desc
	dbKeys, dbKeysExpiring                        *prometheus.Desc
	cmdCalls, cmdDuration, cmdRejected, cmdFailed *prometheus.Desc
	cmdLatency                                    *prometheus.Desc
	errors                                        *prometheus.Desc
	limiters, limAllowed, limDenied, limKeys      *prometheus.Desc
	limShadowDenied                               *prometheus.Desc
	gcra                                          *prometheus.Desc
	rls                                           [5]*prometheus.Desc
}

func newCollector(src Source) *collector {
	c := &collector{src: src}
	g := func(name, help string, get func(*Snapshot) float64) {
		c.scalars = append(c.scalars, scalar{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, get})
	}
	ctr := func(name, help string, get func(*Snapshot) float64) {
		c.scalars = append(c.scalars, scalar{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, get})
	}
	g("redis_uptime_in_seconds", "Seconds since the server started (INFO uptime_in_seconds).",
		func(s *Snapshot) float64 { return float64(s.UptimeSeconds) })
	g("redis_connected_clients", "Client connections open (INFO connected_clients).",
		func(s *Snapshot) float64 { return float64(s.ConnectedClients) })
	g("redis_blocked_clients", "Clients waiting in a blocking command or held by CLIENT PAUSE (INFO blocked_clients).",
		func(s *Snapshot) float64 { return float64(s.BlockedClients) })
	g("redis_tracking_clients", "Clients with CLIENT TRACKING on (INFO tracking_clients).",
		func(s *Snapshot) float64 { return float64(s.TrackingClients) })
	g("redis_max_clients", "The maxclients setting (INFO maxclients).",
		func(s *Snapshot) float64 { return float64(s.MaxClients) })

	g("redis_memory_used_bytes", "Memory in use as maxmemory counts it (INFO used_memory).",
		func(s *Snapshot) float64 { return float64(s.UsedMemory) })
	g("redis_memory_used_rss_bytes", "Resident set size of the process (INFO used_memory_rss).",
		func(s *Snapshot) float64 { return float64(s.UsedMemoryRSS) })
	g("redis_memory_used_lua_bytes", "Estimated memory of Lua states and scripts (INFO used_memory_lua).",
		func(s *Snapshot) float64 { return float64(s.UsedMemoryLua) })
	g("redis_memory_used_scripts_bytes", "Memory of cached scripts and function libraries (INFO used_memory_scripts).",
		func(s *Snapshot) float64 { return float64(s.UsedMemoryScripts) })
	g("redis_memory_max_bytes", "The maxmemory setting; 0 means no limit (INFO maxmemory).",
		func(s *Snapshot) float64 { return float64(s.MaxMemory) })
	g("redis_total_system_memory_bytes", "Memory of the host (INFO total_system_memory).",
		func(s *Snapshot) float64 { return float64(s.TotalSystemMemory) })
	g("redis_mem_fragmentation_ratio", "RSS over used memory (INFO mem_fragmentation_ratio).",
		func(s *Snapshot) float64 { return s.FragmentationRatio })

	g("redis_loading_dump_file", "1 while the snapshot or append-only log is being loaded (INFO loading).",
		func(s *Snapshot) float64 { return b01(s.Loading) })
	g("redis_rdb_changes_since_last_save", "Writes since the last snapshot (INFO rdb_changes_since_last_save).",
		func(s *Snapshot) float64 { return float64(s.RDBChangesSinceSave) })
	g("redis_rdb_bgsave_in_progress", "1 while a background save runs (INFO rdb_bgsave_in_progress).",
		func(s *Snapshot) float64 { return b01(s.RDBBgsaveInProgress) })
	g("redis_rdb_last_save_timestamp_seconds", "Unix time of the last successful save (INFO rdb_last_save_time).",
		func(s *Snapshot) float64 { return float64(s.RDBLastSaveTime) })
	g("redis_rdb_last_bgsave_status", "1 if the last background save succeeded (INFO rdb_last_bgsave_status).",
		func(s *Snapshot) float64 { return b01(s.RDBLastBgsaveOK) })
	g("redis_rdb_last_bgsave_duration_sec", "Seconds the last background save took, -1 before the first (INFO rdb_last_bgsave_time_sec).",
		func(s *Snapshot) float64 { return float64(s.RDBLastBgsaveDuration) })
	g("redis_aof_enabled", "1 while the append-only log is on (INFO aof_enabled).",
		func(s *Snapshot) float64 { return b01(s.AOFEnabled) })
	g("redis_aof_rewrite_in_progress", "1 while BGREWRITEAOF runs (INFO aof_rewrite_in_progress).",
		func(s *Snapshot) float64 { return b01(s.AOFRewriteInProgress) })
	g("redis_aof_last_write_status", "1 if the last write to the append-only log succeeded (INFO aof_last_write_status).",
		func(s *Snapshot) float64 { return b01(s.AOFLastWriteOK) })
	g("redis_aof_current_size_bytes", "Size of the append-only log, base included (INFO aof_current_size).",
		func(s *Snapshot) float64 { return float64(s.AOFCurrentSize) })
	g("redis_aof_base_size_bytes", "Size of the log when it was opened or last rewritten (INFO aof_base_size).",
		func(s *Snapshot) float64 { return float64(s.AOFBaseSize) })
	g("redis_aof_buffer_length", "Bytes appended and not yet written to the log (INFO aof_buffer_length).",
		func(s *Snapshot) float64 { return float64(s.AOFBufferLength) })

	ctr("redis_connections_received_total", "Client connections accepted (INFO total_connections_received).",
		func(s *Snapshot) float64 { return float64(s.ConnectionsReceived) })
	ctr("redis_commands_processed_total", "Commands processed (INFO total_commands_processed).",
		func(s *Snapshot) float64 { return float64(s.CommandsProcessed) })
	ctr("redis_net_input_bytes_total", "Bytes read from clients (INFO total_net_input_bytes).",
		func(s *Snapshot) float64 { return float64(s.NetInputBytes) })
	ctr("redis_net_output_bytes_total", "Bytes written to clients (INFO total_net_output_bytes).",
		func(s *Snapshot) float64 { return float64(s.NetOutputBytes) })
	ctr("redis_rejected_connections_total", "Connections refused because of maxclients (INFO rejected_connections).",
		func(s *Snapshot) float64 { return float64(s.RejectedConnections) })
	ctr("redis_expired_keys_total", "Keys deleted because their TTL passed (INFO expired_keys).",
		func(s *Snapshot) float64 { return float64(s.ExpiredKeys) })
	g("redis_expired_stale_percentage", "Estimated share of keys that expired but are not yet deleted (INFO expired_stale_perc).",
		func(s *Snapshot) float64 { return s.ExpiredStalePercent })
	ctr("redis_expired_time_cap_reached_total", "Active expiry cycles stopped by their time budget (INFO expired_time_cap_reached_count).",
		func(s *Snapshot) float64 { return float64(s.ExpiredTimeCapReached) })
	ctr("redis_evicted_keys_total", "Keys evicted by the maxmemory policy (INFO evicted_keys).",
		func(s *Snapshot) float64 { return float64(s.EvictedKeys) })
	ctr("redis_keyspace_hits_total", "Key lookups that found the key (INFO keyspace_hits).",
		func(s *Snapshot) float64 { return float64(s.KeyspaceHits) })
	ctr("redis_keyspace_misses_total", "Key lookups that found nothing (INFO keyspace_misses).",
		func(s *Snapshot) float64 { return float64(s.KeyspaceMisses) })
	g("redis_pubsub_channels", "Channels with subscribers (INFO pubsub_channels).",
		func(s *Snapshot) float64 { return float64(s.PubSubChannels) })
	g("redis_pubsub_patterns", "Patterns with subscribers (INFO pubsub_patterns).",
		func(s *Snapshot) float64 { return float64(s.PubSubPatterns) })
	ctr("redis_cpu_sys_seconds_total", "System CPU time of the process (INFO used_cpu_sys).",
		func(s *Snapshot) float64 { return s.CPUSysSeconds })
	ctr("redis_cpu_user_seconds_total", "User CPU time of the process (INFO used_cpu_user).",
		func(s *Snapshot) float64 { return s.CPUUserSeconds })

	c.up = prometheus.NewDesc("redis_up", "1: the server answered this scrape.", nil, nil)
	c.instanceInfo = prometheus.NewDesc("redis_instance_info", "Facts about the instance, as labels; the value is always 1.",
		[]string{"role", "redis_version", "hotkv_version", "redis_build_id", "redis_mode", "os", "maxmemory_policy", "tcp_port", "run_id", "process_id", "master_replid"}, nil)
	c.dbKeys = prometheus.NewDesc("redis_db_keys", "Keys in the database (INFO keyspace keys=).", []string{"db"}, nil)
	c.dbKeysExpiring = prometheus.NewDesc("redis_db_keys_expiring", "Keys with a TTL in the database (INFO keyspace expires=).", []string{"db"}, nil)
	c.cmdCalls = prometheus.NewDesc("redis_commands_total", "Calls of the command that ran, failed ones included (INFO commandstats calls=).", []string{"cmd"}, nil)
	c.cmdDuration = prometheus.NewDesc("redis_commands_duration_seconds_total", "Time spent running the command (INFO commandstats usec=).", []string{"cmd"}, nil)
	c.cmdRejected = prometheus.NewDesc("redis_commands_rejected_calls_total", "Calls refused before running: arity, ACL, OOM, ... (INFO commandstats rejected_calls=).", []string{"cmd"}, nil)
	c.cmdFailed = prometheus.NewDesc("redis_commands_failed_calls_total", "Calls that ran and replied an error (INFO commandstats failed_calls=).", []string{"cmd"}, nil)
	c.cmdLatency = prometheus.NewDesc("hotkv_command_duration_seconds", "Distribution of the command's run time.", []string{"cmd"}, nil)
	c.errors = prometheus.NewDesc("redis_errors_total", "Error replies by error code (INFO errorstats).", []string{"err"}, nil)
	c.limiters = prometheus.NewDesc("hotkv_ratelimit_limiters", "Named limiters defined (RATELIMIT.LIST).", nil, nil)
	c.limAllowed = prometheus.NewDesc("hotkv_ratelimit_allowed_units_total", "Units (the COST of each request) the limiter allowed (RATELIMIT.STATS total_allowed).", []string{"limiter", "algo"}, nil)
	c.limDenied = prometheus.NewDesc("hotkv_ratelimit_denied_units_total", "Units (the COST of each request) the limiter denied (RATELIMIT.STATS total_denied).", []string{"limiter", "algo"}, nil)
	c.limShadowDenied = prometheus.NewDesc("hotkv_ratelimit_shadow_denied_units_total", "Units a limiter in shadow mode denied but let through (RATELIMIT.STATS total_shadow_denied); they are in hotkv_ratelimit_denied_units_total too.", []string{"limiter", "algo"}, nil)
	c.limKeys = prometheus.NewDesc("hotkv_ratelimit_keys", "Keys of the limiter with live state (RATELIMIT.STATS unique_keys).", []string{"limiter", "algo"}, nil)
	c.gcra = prometheus.NewDesc("hotkv_gcra_requests_total", "GCRA.LIMIT and CL.THROTTLE requests by decision.", []string{"command", "result"}, nil)
	rlsLabels := []string{"domain", "descriptor"}
	c.rls = [5]*prometheus.Desc{
		prometheus.NewDesc("hotkv_rls_hits_total", "Hits (hits_addend) the Envoy rate limit service decided for the descriptor key.", rlsLabels, nil),
		prometheus.NewDesc("hotkv_rls_over_limit_total", "Hits over the descriptor's limit (shadow-mode ones included).", rlsLabels, nil),
		prometheus.NewDesc("hotkv_rls_near_limit_total", "Hits within the limit but past 80% of it.", rlsLabels, nil),
		prometheus.NewDesc("hotkv_rls_shadow_mode_total", "Hits over the limit of a shadow_mode rule, let through.", rlsLabels, nil),
		prometheus.NewDesc("hotkv_rls_within_limit_total", "Hits within the descriptor's limit.", rlsLabels, nil),
	}
	return c
}

// Describe sends every descriptor the collector can produce.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.scalars {
		ch <- s.desc
	}
	for _, d := range []*prometheus.Desc{c.up, c.instanceInfo, c.dbKeys, c.dbKeysExpiring, c.cmdCalls, c.cmdDuration,
		c.cmdRejected, c.cmdFailed, c.cmdLatency, c.errors, c.limiters, c.limAllowed, c.limDenied, c.limShadowDenied, c.limKeys, c.gcra,
		c.rls[0], c.rls[1], c.rls[2], c.rls[3], c.rls[4]} {
		ch <- d
	}
}

// Collect reads one Snapshot and sends every metric of it.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.MetricsSnapshot()
	send(ch, c.up, prometheus.GaugeValue, 1)
	for _, sc := range c.scalars {
		send(ch, sc.desc, sc.typ, sc.get(s))
	}
	in := s.Info
	send(ch, c.instanceInfo, prometheus.GaugeValue, 1,
		in.Role, in.RedisVersion, in.HotKVVersion, "", in.Mode, in.OS, in.MaxmemoryPolicy,
		strconv.FormatInt(in.TCPPort, 10), in.RunID, strconv.FormatInt(in.ProcessID, 10), in.MasterReplID)
	for _, db := range s.DBs {
		name := "db" + strconv.Itoa(db.Index)
		send(ch, c.dbKeys, prometheus.GaugeValue, float64(db.Keys), name)
		send(ch, c.dbKeysExpiring, prometheus.GaugeValue, float64(db.Expires), name)
	}
	for _, cmd := range s.Commands {
		send(ch, c.cmdCalls, prometheus.CounterValue, float64(cmd.Calls), cmd.Name)
		send(ch, c.cmdDuration, prometheus.CounterValue, float64(cmd.Usec)/1e6, cmd.Name)
		send(ch, c.cmdRejected, prometheus.CounterValue, float64(cmd.RejectedCalls), cmd.Name)
		send(ch, c.cmdFailed, prometheus.CounterValue, float64(cmd.Failed), cmd.Name)
		if h := cmd.Latency; h != nil {
			if m, err := prometheus.NewConstHistogram(c.cmdLatency, h.Count, h.SumSeconds, h.Buckets, label(cmd.Name)); err == nil {
				ch <- m
			}
		}
	}
	for _, e := range s.Errors {
		send(ch, c.errors, prometheus.CounterValue, float64(e.Count), e.Code)
	}
	send(ch, c.limiters, prometheus.GaugeValue, float64(len(s.Limiters)))
	for _, l := range s.Limiters {
		send(ch, c.limAllowed, prometheus.CounterValue, float64(l.Allowed), l.Name, l.Algo)
		send(ch, c.limDenied, prometheus.CounterValue, float64(l.Denied), l.Name, l.Algo)
		send(ch, c.limShadowDenied, prometheus.CounterValue, float64(l.ShadowDenied), l.Name, l.Algo)
		send(ch, c.limKeys, prometheus.GaugeValue, float64(l.Keys), l.Name, l.Algo)
	}
	for _, d := range s.Decisions {
		send(ch, c.gcra, prometheus.CounterValue, float64(d.Allowed), d.Command, "allowed")
		send(ch, c.gcra, prometheus.CounterValue, float64(d.Denied), d.Command, "denied")
	}
	for _, r := range s.RLS {
		for i, v := range [5]uint64{r.Total, r.OverLimit, r.NearLimit, r.ShadowMode, r.WithinLimit} {
			send(ch, c.rls[i], prometheus.CounterValue, float64(v), r.Domain, r.Descriptor)
		}
	}
}

// send sends one metric. Label values come from clients (limiter names and error codes are
// arbitrary bytes), so they are made valid UTF-8 first, and a metric that still cannot be
// built is left out: a panic here would take the process down, as the registry collects on
// goroutines of its own.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	for i, l := range labels {
		labels[i] = label(l)
	}
	if m, err := prometheus.NewConstMetric(d, t, v, labels...); err == nil {
		ch <- m
	}
}

// label returns s if it is valid UTF-8, else s quoted Go-style (invalid bytes as \xNN), so
// distinct binary names stay distinct series.
func label(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strconv.Quote(s)
}
