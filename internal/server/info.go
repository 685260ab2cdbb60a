package server

import (
	"fmt"
	"github.com/hotkv/hotkv/internal/acl"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hotkv/hotkv/internal/command"
)

// infoSections are INFO's sections in Redis's order; def marks the default set.
var infoSections = []struct {
	name string
	def  bool
}{
	{"server", true}, {"clients", true}, {"memory", true}, {"persistence", true},
	{"stats", true}, {"replication", true}, {"cpu", true}, {"modules", true},
	{"commandstats", false}, {"errorstats", true}, {"latencystats", false}, {"cluster", true},
	{"keyspace", true},
}

// Info renders INFO with Redis's section and field names, so tools that parse Redis's INFO
// (redis_exporter, dashboards, client health checks) read HotKV unchanged. held says the caller
// already holds every shard lock (INFO inside EXEC), so shards are read without locking.
func (s *Server) Info(req []string, held bool) string {
	want := map[string]bool{}
	all, everything := false, false
	if len(req) == 0 {
		req = []string{"default"}
	}
	for _, r := range req {
		r = strings.ToLower(r)
		switch r {
		case "default":
			for _, sec := range infoSections {
				if sec.def {
					want[sec.name] = true
				}
			}
		case "all":
			all = true
		case "everything":
			everything = true
		default:
			want[r] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !(want[sec.name] || everything || all) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", strings.ToUpper(sec.name[:1])+sec.name[1:])
		switch sec.name {
		case "server":
			s.infoServer(&b)
		case "clients":
			s.infoClients(&b)
		case "memory":
			s.infoMemory(&b)
		case "persistence":
			s.infoPersistence(&b)
		case "stats":
			s.infoStats(&b, held)
		case "replication":
			if s.repl != nil {
				s.repl.info(&b)
				break
			}
			b.WriteString("role:master\r\nconnected_slaves:0\r\n")
			fmt.Fprintf(&b, "master_replid:%s\r\nmaster_repl_offset:0\r\n", s.runID)
		case "cpu":
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			fmt.Fprintf(&b, "used_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\n",
				tv(ru.Stime), tv(ru.Utime))
		case "modules":
		case "commandstats":
			s.infoCommandStats(&b)
		case "latencystats":
			s.table.LatencyStats(&b)
		case "errorstats":
			s.stats.errMu.Lock()
			codes := make([]string, 0, len(s.stats.errorStats))
			for k := range s.stats.errorStats {
				codes = append(codes, k)
			}
			sort.Strings(codes)
			for _, k := range codes {
				fmt.Fprintf(&b, "errorstat_%s:count=%d\r\n", k, s.stats.errorStats[k])
			}
			s.stats.errMu.Unlock()
		case "cluster":
			if s.repl != nil {
				b.WriteString("cluster_enabled:1\r\n") // Raft mode answers the CLUSTER commands (cluster.go)
			} else {
				b.WriteString("cluster_enabled:0\r\n")
			}
		case "keyspace":
			for i := 0; i < s.store.NumDBs(); i++ {
				keys, expires := s.store.DB(i).Expires(held)
				if keys > 0 {
					fmt.Fprintf(&b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", i, keys, expires)
				}
			}
		}
	}
	return b.String()
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func (s *Server) infoServer(b *strings.Builder) {
	port := s.cfg.GetInt("port")
	up := time.Since(s.start)
	fmt.Fprintf(b, "redis_version:%s\r\nhotkv_version:%s\r\nredis_mode:standalone\r\nos:%s %s\r\n",
		RedisVersion, Version, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "arch_bits:64\r\ngo_version:%s\r\nprocess_id:%d\r\nprocess_supervised:%s\r\nrun_id:%s\r\ntcp_port:%d\r\n",
		runtime.Version(), pid, s.processSupervised(), s.runID, port)
	fmt.Fprintf(b, "server_time_usec:%d\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\nhz:%d\r\n",
		s.clock.NowMs()*1000, int64(up.Seconds()), int64(up.Hours()/24), s.hz.Load())
	exe, _ := os.Executable()
	fmt.Fprintf(b, "executable:%s\r\nconfig_file:%s\r\n", exe, s.cfg.File())
}

func (s *Server) infoClients(b *strings.Builder) {
	s.mu.Lock()
	n := len(s.clients)
	s.mu.Unlock()
	fmt.Fprintf(b, "connected_clients:%d\r\nmaxclients:%d\r\nblocked_clients:%d\r\ntracking_clients:%d\r\n",
		n, s.maxClients.Load(), int64(s.store.Waiters.Count())+s.table.PausedClients(), s.trackingClients())
}

// memSamples are the runtime metrics behind INFO memory.
var memSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
}

// usedMemory returns INFO's used_memory (what eviction compares with maxmemory when a limit
// is set, else the heap's live objects), the runtime's total and the GC cycle count; INFO and
// /metrics both read it.
func (s *Server) usedMemory() (used, total, gcCycles uint64) {
	samples := make([]metrics.Sample, len(memSamples))
	copy(samples, memSamples)
	metrics.Read(samples)
	used = samples[0].Value.Uint64()
	if s.store.Mem.Limit() > 0 {
		used = uint64(s.store.Mem.Used()) // what eviction compares with maxmemory
	}
	return used, samples[1].Value.Uint64(), samples[2].Value.Uint64()
}

// fragmentation is INFO's mem_fragmentation_ratio.
func fragmentation(rss, used uint64) float64 {
	if used == 0 {
		return 0
	}
	return float64(rss) / float64(used)
}

func (s *Server) infoMemory(b *strings.Builder) {
	used, total, gcCycles := s.usedMemory()
	rss := readRSS()
	fmt.Fprintf(b, "used_memory:%d\r\nused_memory_human:%s\r\nused_memory_rss:%d\r\nused_memory_rss_human:%s\r\n",
		used, human(used), rss, human(rss))
	fmt.Fprintf(b, "used_memory_peak:%d\r\ntotal_system_memory:%d\r\nused_memory_runtime:%d\r\n", used, totalSystemMemory(), total)
	// Lua's memory is Go heap like the rest; used_memory_lua estimates it as 32 KiB per idle
	// Lua state plus the cached scripts' source.
	nscripts, scriptBytes, states := s.table.Scripting().Stats()
	lua := uint64(states)*32<<10 + uint64(scriptBytes)
	nfuncs, funcBytes := s.table.Scripting().FunctionStats()
	fmt.Fprintf(b, "used_memory_lua:%d\r\nused_memory_lua_human:%s\r\nused_memory_scripts_eval:%d\r\nnumber_of_cached_scripts:%d\r\n",
		lua, human(lua), scriptBytes, nscripts)
	fmt.Fprintf(b, "number_of_functions:%d\r\nused_memory_functions:%d\r\nused_memory_scripts:%d\r\nused_memory_scripts_human:%s\r\n",
		nfuncs, funcBytes, scriptBytes+funcBytes, human(uint64(scriptBytes+funcBytes)))
	maxmem := uint64(s.store.Mem.Limit())
	fmt.Fprintf(b, "maxmemory:%d\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\n", maxmem, human(maxmem), s.store.Mem.Policy())
	fmt.Fprintf(b, "mem_fragmentation_ratio:%.2f\r\ngc_cycles:%d\r\nmem_allocator:go-%s\r\n", fragmentation(rss, used), gcCycles, runtime.Version())
	// Redis frees large values in a background thread (lazyfree) and counts them here; HotKV
	// drops references and the garbage collector frees them, so nothing is ever pending.
	b.WriteString("lazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n")
}

// keyspaceCounters sums the shards' hit, miss and expiry counters (INFO stats and /metrics);
// held is as for Info.
func (s *Server) keyspaceCounters(held bool) (hits, misses, expired, visited int64) {
	for i := 0; i < s.store.NumDBs(); i++ {
		db := s.store.DB(i)
		for j := 0; j < db.NumShards(); j++ {
			sh := db.Shard(j)
			if !held {
				sh.Lock()
			}
			hits += sh.Hits
			misses += sh.Misses
			expired += sh.ExpiredKeys
			visited += sh.ExpireVisited
			if !held {
				sh.Unlock()
			}
		}
	}
	return hits, misses, expired, visited
}

func (s *Server) infoStats(b *strings.Builder, held bool) {
	hits, misses, expired, _ := s.keyspaceCounters(held)
	fmt.Fprintf(b, "total_connections_received:%d\r\ntotal_commands_processed:%d\r\n",
		s.stats.connectionsReceived.Load(), s.stats.commandsProcessed.Load())
	fmt.Fprintf(b, "total_net_input_bytes:%d\r\ntotal_net_output_bytes:%d\r\nrejected_connections:%d\r\n",
		s.stats.netInput.Load(), s.stats.netOutput.Load()+s.hub.NetOutput.Load(), s.stats.rejectedConns.Load())
	fmt.Fprintf(b, "expired_keys:%d\r\n", expired)
	if es := s.stats.expire.Load(); es != nil {
		fmt.Fprintf(b, "expired_stale_perc:%.2f\r\nexpired_time_cap_reached_count:%d\r\nexpire_cycle_cpu_milliseconds:%d\r\n",
			es.StalePercent, es.TimeCapReached, es.LastCycleMicros/1000)
	} else {
		b.WriteString("expired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\n")
	}
	fmt.Fprintf(b, "evicted_keys:%d\r\nkeyspace_hits:%d\r\nkeyspace_misses:%d\r\n", s.store.Mem.Evicted(), hits, misses)
	ps, tr := s.infoPubSubStats()
	b.WriteString(ps)
	b.WriteString(tr)
	fmt.Fprintf(b, "migrate_cached_sockets:%d\r\n", command.MigrateCachedSockets(s.store))
	fmt.Fprintf(b, "total_error_replies:%d\r\n", s.stats.totalErrorReplies.Load())
	// Redis 7.2's ACL denial counters (7.0 has none): the security issue asks for them.
	fmt.Fprintf(b, "acl_access_denied_auth:%d\r\nacl_access_denied_cmd:%d\r\nacl_access_denied_key:%d\r\nacl_access_denied_channel:%d\r\n",
		s.acl.Log.Denied(acl.DeniedAuth), s.acl.Log.Denied(acl.DeniedCommand), s.acl.Log.Denied(acl.DeniedKey), s.acl.Log.Denied(acl.DeniedChannel))
}

func (s *Server) infoCommandStats(b *strings.Builder) {
	var emit func(c *command.Command)
	emit = func(c *command.Command) {
		calls := c.Calls.Load()
		rej, failed := c.RejectedCalls.Load(), c.FailedCalls.Load()
		if calls > 0 || rej > 0 || failed > 0 {
			usec := c.Usec.Load()
			per := 0.0
			if calls > 0 {
				per = float64(usec) / float64(calls)
			}
			fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				c.FullName(), calls, usec, per, rej, failed)
		}
		for _, sc := range c.Subcommands {
			emit(sc)
		}
	}
	for _, c := range s.table.All() {
		emit(c)
	}
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// readRSS returns the resident set size from /proc, or 0 where that is not available.
func readRSS() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res uint64
	_, _ = fmt.Sscan(string(data), &size, &res)
	return res * uint64(os.Getpagesize())
}

func totalSystemMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return si.Totalram * uint64(si.Unit)
}
