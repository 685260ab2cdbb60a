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
