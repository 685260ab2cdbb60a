package freeport

import "testing"

// TestNeverTwice: ports are handed out once per process, even when the kernel offers a port
// again because nothing listens on it.
func TestNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 2000 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

// TestBelowEphemeral: ports come from below the kernel's ephemeral range, from which outgoing
// connections take their local ports, so a port handed out for a server started later cannot
// have become the local end of a connection meanwhile.
func TestBelowEphemeral(t *testing.T) {
	start := ephemeralStart()
	if start-lowest < 1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it", start)
	}
	for range 200 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p >= start {
			t.Fatalf("port %d is outside %d-%d", p, lowest, start-1)
		}
	}
}
