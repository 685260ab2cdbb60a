package command

import (
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/resp"
)

// TestExamplesTable checks the examples table itself; tests/examples_test.go runs the examples.
// Every entry names a command of the table, every step splits into arguments and has a reply,
// the examples of a command use that command, and every rate-limit command of the spec has
// examples.
func TestExamplesTable(t *testing.T) {
	tab := Default()
	lookup := func(full string) *Command {
		name, sub, isSub := strings.Cut(full, "|")
		c := tab.Lookup([]byte(name))
		if c == nil || !isSub {
			return c
		}
		return c.Sub(sub)
	}
	for _, name := range ExampleNames() {
		c := lookup(name)
		if c == nil {
			t.Errorf("examples for %q: no such command", name)
			continue
		}
		if c.FullName() != name {
			t.Errorf("examples for %q: the command's full name is %q", name, c.FullName())
		}
		used := false
		for i, ex := range Examples(name) {
			if len(ex.Steps) == 0 {
				t.Errorf("%s example %d has no steps", name, i+1)
			}
			if ex.Clock < 0 {
				t.Errorf("%s example %d: negative clock", name, i+1)
			}
			for _, st := range ex.Steps {
				args, ok := resp.SplitArgs(st.Cmd)
				if !ok || len(args) == 0 {
					t.Errorf("%s: %q does not split into arguments", name, st.Cmd)
					continue
				}
				if st.Reply == "" || strings.HasSuffix(st.Reply, "\n") {
					t.Errorf("%s: %q: the reply must be redis-cli's output without the final newline, got %q", name, st.Cmd, st.Reply)
				}
				sc := tab.Lookup([]byte(args[0]))
				if sc != nil && c.Parent() != nil && sc == c.Parent() && len(args) > 1 {
					sc = sc.Sub(strings.ToLower(args[1]))
				}
				used = used || sc == c
			}
		}
		if !used {
			t.Errorf("the examples of %s never run it", name)
		}
	}
	// The user-facing rate-limit commands of spec/RATELIMIT.md §1 (not internal ones such as
	// the journal's RATELIMIT.SETSTATE).
	for _, name := range []string{"gcra.limit", "gcra.limitall", "gcra.refund", "gcra.peek", "gcra.reset", "cl.throttle",
		"ratelimit.create", "ratelimit.check", "ratelimit.peek", "ratelimit.reset",
		"ratelimit.stats", "ratelimit.drop", "ratelimit.list"} {
		if len(Examples(name)) == 0 {
			t.Errorf("rate-limit command %s has no examples", name)
		}
	}
}
