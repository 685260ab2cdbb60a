package server

import "github.com/hotkv/hotkv/internal/store"

// applyMemoryConfig hands the maxmemory directives to the store, which evicts (store/evict.go).
// They live apart from applyConfig's other cases so the memory limit reads as one piece.
func (s *Server) applyMemoryConfig(name, value string, n int64) {
	m := &s.store.Mem
	switch name {
	case "maxmemory":
		m.SetLimit(n)
		if n > 0 && !s.table.Loading.Load() {
			// As Redis's updateMaxmemory: a lower limit evicts at once, not at the next write;
			// but not while the data loads (isSafeToPerformEvictions): the loader's writes
			// are not logged again, so keys evicted under it would differ from the files.
			s.store.PerformEvictions(s.clock.NowMs())
		}
	case "maxmemory-policy":
		p, _ := store.ParsePolicy(value)
		m.SetPolicy(p)
	case "maxmemory-samples":
		m.SetSamples(int(n))
	case "maxmemory-eviction-tenacity":
		m.SetTenacity(int(n))
	case "lfu-log-factor", "lfu-decay-time":
		f := s.cfg.GetInt("lfu-log-factor")
		d := s.cfg.GetInt("lfu-decay-time")
		m.SetLFU(int(f), int(d))
	}
}
