package glob

import "testing"

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
