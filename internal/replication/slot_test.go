package replication

import "testing"

// Slots as Redis's CLUSTER KEYSLOT reports them.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443,
		"foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061, "": 0, "123456789": 0x31C3 & 16383,
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
}
