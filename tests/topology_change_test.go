package tests

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/replication"
)

// TestBlockedClientRedirectedOnLeadershipLoss: a client blocked in BLPOP on the leader is
// answered when leadership moves, as Redis Cluster's clusterRedirectBlockedClientIfNeeded
// does: -MOVED to the new leader, or -CLUSTERDOWN while the old one knows none yet. It must
// not keep waiting: pushes now go to the new leader, and the old one, applying them from the
// log, must not hand their elements to its stale waiters.
func TestBlockedClientRedirectedOnLeadershipLoss(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()

	blocked := make([]net.Conn, 0, 2)
	for _, key := range []string{"q1", "q2"} {
		nc, err := net.Dial("tcp", leader.srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		// BLPOP key 0: wait for ever.
		if _, err := nc.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$2\r\n" + key + "\r\n$1\r\n0\r\n")); err != nil {
			t.Fatal(err)
		}
		blocked = append(blocked, nc)
	}
	waitUntil(t, "two blocked clients", 10*time.Second, func() bool {
		return strings.Contains(leader.c.Info(ctx, "clients").Val(), "blocked_clients:2")
	})

	next := otherThan(nodes, leader)
	if err := leader.c.Do(ctx, "RAFT", "TRANSFER", next.id).Err(); err != nil {
		t.Fatalf("RAFT TRANSFER: %v", err)
	}
	nl := waitLeader(t, nodes)
	for i, nc := range blocked {
		key := []string{"q1", "q2"}[i]
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 256)
		n, err := nc.Read(buf)
		if err != nil {
			t.Fatalf("blocked BLPOP %s: no reply after the transfer: %v", key, err)
		}
		moved := "-MOVED " + strconv.Itoa(replication.KeySlot([]byte(key))) + " " + nl.srv.Addr + "\r\n"
		if got := string(buf[:n]); got != moved && got != "-CLUSTERDOWN No leader for this shard\r\n" {
			t.Fatalf("blocked BLPOP %s got %q, want %q or CLUSTERDOWN", key, got, moved)
		}
	}
	if !strings.Contains(leader.c.Info(ctx, "clients").Val(), "blocked_clients:0") {
		t.Fatalf("the old leader still has blocked clients: %s", leader.c.Info(ctx, "clients").Val())
	}
	// A push on the new leader stays there for its own clients, on every node.
	if err := nl.c.RPush(ctx, "q2", "kept").Err(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, nl, nodes)
	for _, n := range nodes {
		if d := debugDigest(t, n); d != debugDigest(t, nl) {
			t.Fatalf("%s's DEBUG DIGEST differs from the leader's", n.id)
		}
	}
	if got := nl.c.LRange(ctx, "q2", 0, -1).Val(); len(got) != 1 || got[0] != "kept" {
		t.Fatalf("q2 on the new leader: %v", got)
	}

	// On the new leader a blocked client is served as usual, and keeps waiting through a
	// topology change that leaves its slot here.
	nc, err := net.Dial("tcp", nl.srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$2\r\nq1\r\n$1\r\n0\r\n")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a blocked client on the new leader", 10*time.Second, func() bool {
		return strings.Contains(nl.c.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	if err := nl.c.RPush(ctx, "q1", "x").Err(); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	n, err := nc.Read(buf)
	if err != nil || string(buf[:n]) != "*2\r\n$2\r\nq1\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP on the new leader: %q %v", buf[:n], err)
	}
}

// TestBlockedClientRedirectedOnSlotMove: a client blocked on a key whose slot moves to another
// shard gets -MOVED to the new owner once the move is done; one blocked on a key that stays
// is still served by a push.
func TestBlockedClientRedirectedOnSlotMove(t *testing.T) {
	ctx := context.Background()
	sc := newShardedCluster(t, 2, 1, true) // s1: 0-8191, s2: 8192-16383
	defer sc.explain(t)
	s1, s2 := sc.shards[0][0], sc.shards[1][0]
	const moving, staying = "{user:2}:q", "{user:13}:q" // slots 6777 and 4572
	blpop := func(key string) net.Conn {
		nc, err := net.Dial("tcp", s1.srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		cmd := "*3\r\n$5\r\nBLPOP\r\n$" + strconv.Itoa(len(key)) + "\r\n" + key + "\r\n$1\r\n0\r\n"
		if _, err := nc.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	mc, sc2 := blpop(moving), blpop(staying)
	waitUntil(t, "two blocked clients", 10*time.Second, func() bool {
		return strings.Contains(s1.c.Info(ctx, "clients").Val(), "blocked_clients:2")
	})
	retryElections(t, "MIGRATE", func() error {
		return s1.c.Do(ctx, "CLUSTERX", "MIGRATE", 5000, 8191, "s2").Err()
	})
	_ = mc.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 256)
	n, err := mc.Read(buf)
	if err != nil {
		t.Fatalf("BLPOP on a moved slot: no reply: %v", err)
	}
	want := "-MOVED 6777 " + s2.srv.Addr + "\r\n"
	if got := string(buf[:n]); got != want {
		t.Fatalf("BLPOP on a moved slot got %q, want %q", got, want)
	}
	if err := s1.c.RPush(ctx, staying, "x").Err(); err != nil {
		t.Fatal(err)
	}
	_ = sc2.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err = sc2.Read(buf)
	if want := "*2\r\n$11\r\n" + staying + "\r\n$1\r\nx\r\n"; err != nil || string(buf[:n]) != want {
		t.Fatalf("BLPOP on a slot that stayed: %q %v, want %q", buf[:n], err, want)
	}
}

// TestIdleConnectionAcrossReelection: a connection idle while its node lost and regained
// leadership gets its next write acknowledged, not a spurious TRYAGAIN (the loss concerned
// no reply of it).
func TestIdleConnectionAcrossReelection(t *testing.T) {
	nodes := newGroup(t, 3)
	first := waitLeader(t, nodes)
	ctx := context.Background()
	idle := first.srv.Dial(t)
	require.Equal(t, "+OK\r\n", idle.Do("SET", "before", "1"))
	other := otherThan(nodes, first)
	require.NoError(t, first.c.Do(ctx, "RAFT", "TRANSFER", other.id).Err())
	waitUntil(t, "the other node to lead", 20*time.Second, func() bool { return waitLeader(t, nodes) == other })
	require.NoError(t, other.c.Do(ctx, "RAFT", "TRANSFER", first.id).Err())
	waitUntil(t, "the first node to lead again", 20*time.Second, func() bool { return waitLeader(t, nodes) == first })
	require.Equal(t, "+OK\r\n", idle.Do("SET", "after", "1"))
}
