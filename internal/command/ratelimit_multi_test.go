package command

import (
	"testing"

	"github.com/hotkv/hotkv/internal/replication"
)

// TestGCRALimitAllKeysSlot checks that GCRA.LIMITALL's keynum spec with step 3 gives the
// cluster every key and only keys: keys of different slots are CROSSSLOT, periods and bursts
// (which hash to other slots) never count, and a malformed line routes nowhere.
func TestGCRALimitAllKeysSlot(t *testing.T) {
	cmd := Default().Lookup([]byte("gcra.limitall"))
	if cmd == nil {
		t.Fatal("gcra.limitall is not in the table")
	}
	args := func(words ...string) [][]byte {
		out := [][]byte{[]byte("GCRA.LIMITALL")}
		for _, w := range words {
			out = append(out, []byte(w))
		}
		return out
	}
	same := args("2", "{u}a", "60000", "10", "{u}b", "1000", "2", "COUNT", "3")
	slot, cross := KeysSlot(cmd, same)
	if cross || slot != replication.KeySlot([]byte("{u}a")) {
		t.Fatalf("same-slot keys: slot %d cross %v", slot, cross)
	}
	if idx := cmd.KeyIndexes(same); len(idx) != 2 || idx[0] != 2 || idx[1] != 5 {
		t.Fatalf("key indexes %v, want [2 5]", idx)
	}
	if _, cross := KeysSlot(cmd, args("2", "a", "60000", "10", "b", "1000", "2")); !cross {
		t.Fatal("keys a and b hash to different slots: want CROSSSLOT")
	}
	if idx := cmd.KeyIndexes(args("3", "a", "1", "1", "b", "1", "1")); len(idx) != 0 {
		t.Fatalf("numlimits past the end: keys %v, want none", idx)
	}
	// The other keynum commands keep Redis 7.0's step-1 positions.
	z := Default().Lookup([]byte("zunionstore"))
	if idx := z.KeyIndexes([][]byte{[]byte("ZUNIONSTORE"), []byte("d"), []byte("2"), []byte("a"), []byte("b")}); len(idx) != 3 {
		t.Fatalf("zunionstore keys %v", idx)
	}
}
