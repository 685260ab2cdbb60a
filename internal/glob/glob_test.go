package glob

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true}, {"h[ae]llo", "hillo", false}, {"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false}, {"h[a-b]llo", "hbllo", true}, {"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true}, {`h\*llo`, "hello", false}, {"user:*", "user:1", true},
		{"*:*", "a:b", true}, {"abc", "abc", true}, {"abc", "abcd", false}, {"a*c", "ac", true},
		{"[b-a]", "a", true}, {"*a", "", false}, {"", "", true}, {"", "a", false},
	}
	for _, tc := range cases {
		if got := Match(tc.p, tc.s, false); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
	if !Match("HE*", "hello", true) || Match("HE*", "hello", false) {
		t.Error("nocase")
	}
}

func TestPathologicalPatternIsBounded(t *testing.T) {
	p := ""
	for i := 0; i < 30; i++ {
		p += "*a"
	}
	p += "b"
	s := ""
	for i := 0; i < 60; i++ {
		s += "a"
	}
	_ = Match(p, s, false) // must return, not hang
}

// TestNestingCap is Redis 7's "Regression for pattern matching very long nested loops": more
// than 1000 star groups never match while string is left, as Redis's capped recursion answers.
func TestNestingCap(t *testing.T) {
	long := strings.Repeat("a", 50000)
	if Match(strings.Repeat("*?", 50000), long, false) {
		t.Fatal("50000 star groups matched")
	}
	if !Match(strings.Repeat("*?", 1000), long, false) {
		t.Fatal("1000 star groups must still match")
	}
	if Match(strings.Repeat("*?", 1001), long, false) {
		t.Fatal("1001 star groups matched")
	}
	if !Match(strings.Repeat("?", 1000)+strings.Repeat("*", 5000), long, false) {
		t.Fatal("trailing stars are no nesting")
	}
}
