package rls

import "strings"

// Entry is one descriptor entry of a request (Envoy's RateLimitDescriptor.Entry).
type Entry struct{ Key, Value string }

// Match is the rule a request descriptor is charged against, and the key of its metrics.
type Match struct {
	Rule *Rule
	// StatKey is the metrics label: the rule's path, with the request's value appended
	// when the rule has detailed_metric and matched a key without a value.
	StatKey string
}

// Match finds the rule for one descriptor of domain, as envoyproxy/ratelimit does: each entry
// is looked up in turn at the current level of the tree, first as `key_value`, then among the
// level's wildcard values (`value: foo*` matches every value starting with foo; the first
// wildcard in file order wins), then as the bare `key` (a rule for every value). A rule
// applies only when it sits on the node of the descriptor's last entry: a request with more
// or fewer entries than the configured path matches nothing. ok is false when nothing applies
// (unknown domain, no such path, or a node without a rate_limit).
//
// One deliberate difference: envoyproxy/ratelimit (as of its 2023 code) checks wildcards
// against the domain's top-level list at every depth; HotKV checks the current level's
// wildcards, which is what a nested `value: foo*` is written to mean.
func (c *Config) Match(domain string, entries []Entry) (m Match, ok bool) {
	level := c.domains[domain]
	if level == nil || len(entries) == 0 {
		return m, false
	}
	for i, e := range entries {
		var next *node
		exact := false
		if e.Value != "" {
			kv := e.Key + "_" + e.Value
			next = level.children[kv]
			exact = next != nil
			if next == nil {
				for _, w := range level.wildcards {
					if strings.HasPrefix(kv, w[:len(w)-1]) {
						next = level.children[w]
						break
					}
				}
			}
		}
		if next == nil {
			next = level.children[e.Key]
		}
		if next == nil {
			return Match{}, false
		}
		if i == len(entries)-1 {
			if next.rule == nil {
				return Match{}, false
			}
			m = Match{Rule: next.rule, StatKey: next.rule.Path}
			if next.rule.Detailed && !exact && e.Value != "" {
				m.StatKey += "_" + e.Value
			}
			return m, true
		}
		level = next
	}
	return Match{}, false
}
