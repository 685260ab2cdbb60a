package server

import (
	"sync"
	"testing"
	"time"
)

// A commit wakes exactly the waiters whose target it covers, in any arrival order, and
// wakeAll (a lost leadership) wakes the rest.
func TestCommitWaitersWakeOnlySettled(t *testing.T) {
	var mu sync.Mutex
	var w commitWaiters
	woke := make(chan uint64, 8)
	var wg sync.WaitGroup
	for _, target := range []uint64{5, 2, 9, 3, 7} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			w.wait(&mu, target)
			mu.Unlock()
			woke <- target
		}()
	}
	waitParked := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			mu.Lock()
			got := len(w.h)
			mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiters parked, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	collect := func(n int) map[uint64]bool {
		t.Helper()
		got := map[uint64]bool{}
		for range n {
			select {
			case x := <-woke:
				got[x] = true
			case <-time.After(10 * time.Second):
				t.Fatalf("woke %v, want %d", got, n)
			}
		}
		return got
	}
	waitParked(5)
	mu.Lock()
	w.wake(5)
	mu.Unlock()
	if got := collect(3); !got[2] || !got[3] || !got[5] {
		t.Fatalf("durable 5 woke %v", got)
	}
	waitParked(2)
	select {
	case x := <-woke:
		t.Fatalf("waiter for %d woke before its commit", x)
	case <-time.After(20 * time.Millisecond):
	}
	mu.Lock()
	w.wakeAll()
	mu.Unlock()
	if got := collect(2); !got[7] || !got[9] {
		t.Fatalf("wakeAll woke %v", got)
	}
	wg.Wait()
}
