package server

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hotkv/hotkv/internal/config"
)

// oomScoreFile is where Linux takes a process's OOM-killer adjustment.
const oomScoreFile = "/proc/self/oom_score_adj"

// oomState remembers the score the process had before HotKV first changed it (Redis's
// oom_score_adj_base): `relative` adds to it, and `no` puts it back.
type oomState struct {
	mu       sync.Mutex
	adjusted bool
	base     int
}

// applyOOMScore writes the OOM score that oom-score-adj and oom-score-adj-values, as get reads
// them, ask for (Redis's setOOMScoreAdj for a primary). The error is the file's.
func (s *Server) applyOOMScore(get func(string) string) error {
	o := &s.oom
	o.mu.Lock()
	defer o.mu.Unlock()
	mode := get("oom-score-adj")
	var val int
	switch {
	case mode != "no":
		if !o.adjusted {
			b, err := os.ReadFile(oomScoreFile)
			if err != nil {
				s.log.Warn("Unable to read oom_score_adj", "err", err)
				return err
			}
			o.base, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			o.adjusted = true
		}
		val, _ = strconv.Atoi(strings.Fields(get("oom-score-adj-values"))[0])
		if mode != "absolute" {
			val += o.base
		}
		val = min(max(val, -1000), 1000)
	case o.adjusted:
		o.adjusted = false
		val = o.base
	default:
		return nil
	}
	f, err := os.OpenFile(oomScoreFile, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(strconv.Itoa(val) + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.log.Warn("Unable to write oom_score_adj", "err", err)
	}
	return err
}

// reloadOOM implements CONFIG SET of oom-score-adj and oom-score-adj-values: the new score is
// written first, and a score that cannot be written refuses the whole CONFIG SET with Redis's
// error; if another parameter is refused afterwards, the score goes back.
func (s *Server) reloadOOM(pairs [][2]string, set func() error) error {
	overlay := map[string]string{}
	first := ""
	for _, p := range pairs {
		if d := s.cfg.Lookup(p[0]); d != nil && (d.Name == "oom-score-adj" || d.Name == "oom-score-adj-values") {
			v := p[1]
			if d.Type == config.Enum {
				v = strings.ToLower(v)
			}
			overlay[d.Name] = v
			if first == "" {
				first = p[0]
			}
		}
	}
	if first == "" {
		return set()
	}
	get := func(name string) string {
		if v, ok := overlay[name]; ok {
			return v
		}
		return s.cfg.Get(name)
	}
	// Values CONFIG SET will refuse are left to it, so that its error is the one returned.
	if d := s.cfg.Lookup("oom-score-adj-values"); d != nil && d.Parse != nil {
		if _, err := d.Parse(get("oom-score-adj-values")); err != nil {
			return set()
		}
	}
	if d := s.cfg.Lookup("oom-score-adj"); d != nil {
		if !slices.Contains(d.Values, get("oom-score-adj")) {
			return set()
		}
	}
	if err := s.applyOOMScore(get); err != nil {
		_ = s.applyOOMScore(s.cfg.Get)
		return &config.SetError{Name: first, Reason: "Failed to set current oom_score_adj. Check server logs."}
	}
	if err := set(); err != nil {
		_ = s.applyOOMScore(s.cfg.Get)
		return err
	}
	return nil
}
