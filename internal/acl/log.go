package acl

import (
	"sync"
	"sync/atomic"
	"time"
)

// Log contexts, as ACL LOG names them.
const (
	ContextToplevel = "toplevel"
	ContextMulti    = "multi"
	ContextLua      = "lua"
)

// LogEntry is one ACL LOG entry: a denied command, key, channel or authentication, counted
// while the same denial repeats within a minute.
type LogEntry struct {
	Count    int64
	Reason   string // "command", "key", "channel" or "auth"
	Context  string
	Object   string
	Username string
	// Time is the last occurrence (Unix ms); ClientInfo describes the client of that one.
	Time       int64
	ClientInfo string
}

// logGroupingMs is how close in time a denial must be to an entry's last one to be counted in
// it (Redis's ACL_LOG_GROUPING_MAX_TIME_DELTA).
const logGroupingMs = 60000

// Log is the ACL log: the most recent denials first, at most acllog-max-len entries.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry // newest first
	max     int64
	// denied counts denials by reason (Check results), for INFO's acl_access_denied_*.
	denied [5]atomic.Int64
}

// Denied returns how many denials were logged for a reason since the start or ResetStats.
func (l *Log) Denied(reason int) int64 { return l.denied[reason].Load() }

// ResetStats zeroes the denial counters (CONFIG RESETSTAT).
func (l *Log) ResetStats() {
	for i := range l.denied {
		l.denied[i].Store(0)
	}
}

// ReasonName is the ACL LOG name of a Check result.
func ReasonName(reason int) string {
	switch reason {
	case DeniedCommand:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// SetMax applies acllog-max-len, dropping the oldest entries beyond it at the next addition, as
// Redis trims.
func (l *Log) SetMax(n int64) {
	l.mu.Lock()
	l.max = n
	l.mu.Unlock()
}

// Add records a denial. Among the ten newest entries, one with the same reason, context,
// object and user whose last occurrence is within a minute is counted up and moved to the
// front instead of adding another (Redis's addACLLogEntry).
func (l *Log) Add(e LogEntry) {
	for r := DeniedCommand; r <= DeniedChannel; r++ {
		if ReasonName(r) == e.Reason {
			l.denied[r].Add(1)
		}
	}
	if e.Time == 0 {
		e.Time = time.Now().UnixMilli()
	}
	e.Count = 1
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < len(l.entries) && i < 10; i++ {
		cur := l.entries[i]
		delta := cur.Time - e.Time
		if delta < 0 {
			delta = -delta
		}
		if cur.Reason == e.Reason && cur.Context == e.Context && delta <= logGroupingMs &&
			cur.Object == e.Object && cur.Username == e.Username {
			cur.Count++
			cur.Time = e.Time
			cur.ClientInfo = e.ClientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = cur
			return
		}
	}
	ne := e
	l.entries = append(l.entries, nil)
	copy(l.entries[1:], l.entries)
	l.entries[0] = &ne
	for int64(len(l.entries)) > l.max {
		l.entries[len(l.entries)-1] = nil
		l.entries = l.entries[:len(l.entries)-1]
	}
}

// Entries returns copies of up to n newest entries.
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.entries))
	out := make([]LogEntry, n)
	for i := 0; i < n; i++ {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log (ACL LOG RESET).
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}
