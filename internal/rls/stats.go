package rls

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// maxStatSeries bounds the metric series detailed_metric can create: values come from
// requests (client IPs, user ids), and past this many a rule's hits are counted under its own
// path instead of a new series.
const maxStatSeries = 10000

// counters are one metric series, counted in hits (hits_addend), as envoyproxy/ratelimit
// counts.
type counters struct {
	domain, key                       string
	total, over, near, shadow, within atomic.Uint64
}

type statsTable struct {
	m sync.Map // stat key -> *counters
	n atomic.Int64
}

func (t *statsTable) count(r *Rule, statKey string, hits uint64, over, near bool) {
	v, ok := t.m.Load(statKey)
	if !ok {
		if t.n.Load() >= maxStatSeries && statKey != r.Path {
			t.count(r, r.Path, hits, over, near)
			return
		}
		key := strings.TrimPrefix(statKey, r.Domain+".")
		var loaded bool
		v, loaded = t.m.LoadOrStore(statKey, &counters{domain: r.Domain, key: key})
		if !loaded {
			t.n.Add(1)
		}
	}
	c := v.(*counters)
	c.total.Add(hits)
	switch {
	case over && r.Shadow:
		c.over.Add(hits)
		c.shadow.Add(hits)
	case over:
		c.over.Add(hits)
	default:
		c.within.Add(hits)
		if near {
			c.near.Add(hits)
		}
	}
}

// Stat is one descriptor's counters, for the hotkv_rls_* metrics.
type Stat struct {
	Domain, Key                                              string
	TotalHits, OverLimit, NearLimit, ShadowMode, WithinLimit uint64
}

// Stats returns every series, sorted by domain and key.
func (s *Service) Stats() []Stat {
	var out []Stat
	s.stats.m.Range(func(_, v any) bool {
		c := v.(*counters)
		out = append(out, Stat{Domain: c.domain, Key: c.key, TotalHits: c.total.Load(), OverLimit: c.over.Load(),
			NearLimit: c.near.Load(), ShadowMode: c.shadow.Load(), WithinLimit: c.within.Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Domain != out[j].Domain {
			return out[i].Domain < out[j].Domain
		}
		return out[i].Key < out[j].Key
	})
	return out
}
