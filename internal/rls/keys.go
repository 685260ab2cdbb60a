package rls

import (
	"strings"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// escape percent-encodes the bytes that structure a state key (':' between entries, '='
// between key and value, '%' itself) and the hash-tag braces, so that no two descriptors
// share a key and a value cannot pick the cluster slot of its key.
func escape(s string) string {
	if !strings.ContainsAny(s, "%:={}") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%', ':', '=', '{', '}':
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// entriesKey is `key1=value1:key2=value2`, each part escaped: the per-descriptor part of a
// GCRA or fixed-window key and the key a sliding-window limiter is checked with.
func entriesKey(entries []*rlcommon.RateLimitDescriptor_Entry) []byte {
	var b []byte
	for i, e := range entries {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, escape(e.GetKey())...)
		b = append(b, '=')
		b = append(b, escape(e.GetValue())...)
	}
	return b
}

// StateKey is the GCRA key of a descriptor (`rls:<domain>:<key1>=<value1>:...`): what
// GCRA.PEEK and GCRA.RESET take to inspect or reset it. A fixed-window rule's counter is this
// key followed by `:<window start, unix seconds>`.
func StateKey(domain string, entries ...Entry) string {
	es := make([]*rlcommon.RateLimitDescriptor_Entry, len(entries))
	for i, e := range entries {
		es[i] = &rlcommon.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value}
	}
	return "rls:" + escape(domain) + ":" + string(entriesKey(es))
}

func isError(reply []byte) bool { return len(reply) > 0 && reply[0] == '-' }

func errorText(reply []byte) string {
	return strings.TrimRight(strings.TrimPrefix(string(reply), "-"), "\r\n")
}

// unavailableReply reports errors that mean "not here, not now" rather than a broken request:
// Envoy should apply its failure mode to them.
func unavailableReply(msg string) bool {
	for _, p := range []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "LOADING", "MASTERDOWN", "NOREPLICAS", "OOM", "MISCONF"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// parseInts reads a RESP2 integer or array of integers (nested arrays are flattened); ok is
// false for anything else.
func parseInts(b []byte) (vals []int64, ok bool) {
	vals, rest, ok := parseIntsInto(nil, b)
	return vals, ok && len(rest) == 0
}

func parseIntsInto(vals []int64, b []byte) ([]int64, []byte, bool) {
	if len(b) < 3 {
		return vals, b, false
	}
	end := strings.Index(string(b), "\r\n")
	if end < 0 {
		return vals, b, false
	}
	n, ok := atoi(b[1:end])
	if !ok {
		return vals, b, false
	}
	rest := b[end+2:]
	switch b[0] {
	case ':':
		return append(vals, n), rest, true
	case '*':
		for range n {
			vals, rest, ok = parseIntsInto(vals, rest)
			if !ok {
				return vals, rest, false
			}
		}
		return vals, rest, true
	}
	return vals, b, false
}

func atoi(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, len(b) > 0
}

func msDuration(ms int64) time.Duration { return time.Duration(max(ms, 0)) * time.Millisecond }
