package tests

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/testutil"
)

// The Redis Cluster facade of Raft mode (internal/server/cluster.go): a group answers the
// CLUSTER commands as a one-shard Redis Cluster whose master is the leader, in Redis 7.0's
// exact reply shapes, and READONLY connections read on followers.

func clusterID(raftID string) string {
	s := sha1.Sum([]byte(raftID))
	return hex.EncodeToString(s[:])
}

func clientPort(t *testing.T, n *raftNode) int {
	t.Helper()
	i := strings.LastIndexByte(n.srv.Addr, ':')
	p, err := strconv.Atoi(n.srv.Addr[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitTopology waits until every node in nodes describes leader as the master and members
// nodes in all, every address known (followers announce theirs through the log).
func waitTopology(t *testing.T, leader *raftNode, nodes []*raftNode, members int) {
	t.Helper()
	ctx := context.Background()
	waitUntil(t, "every node to know every member's client address", 60*time.Second, func() bool {
		for _, n := range nodes {
			slots, err := n.c.ClusterSlots(ctx).Result()
			if err != nil || len(slots) != 1 || len(slots[0].Nodes) != members {
				return false
			}
			if slots[0].Nodes[0].Addr != leader.srv.Addr {
				return false
			}
		}
		return true
	})
}

func respInt(n int) string { return ":" + strconv.Itoa(n) + "\r\n" }

func TestClusterFacadeReplies(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	waitTopology(t, leader, nodes, len(nodes))
	ctx := context.Background()
	var followers []*raftNode
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	sort.Slice(followers, func(i, j int) bool { return followers[i].id < followers[j].id })
	ordered := append([]*raftNode{leader}, followers...)
	term := leader.status(t)["term"]

	// Keys in two slots, for COUNTKEYSINSLOT and GETKEYSINSLOT.
	for _, k := range []string{"{user1}.a", "{user1}.b", "{user1}.c", "foo"} {
		if err := leader.c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitApplied(t, leader, nodes)

	// RAFT ANNOUNCE, as followers send it: only on the leader, only for members.
	lr, fr := leader.srv.Dial(t), followers[0].srv.Dial(t)
	for _, c := range []struct {
		r          *testutil.Raw
		args, want string
	}{
		{lr, "RAFT ANNOUNCE nosuch 127.0.0.1:1", "-ERR \"nosuch\" is not a member of the group\r\n"},
		{lr, "RAFT ANNOUNCE n2 nocolon", "-ERR invalid client address \"nocolon\"\r\n"},
		{lr, "RAFT ANNOUNCE " + followers[0].id + " " + followers[0].srv.Addr, "+OK\r\n"}, // unchanged: no entry
		{fr, "RAFT ANNOUNCE n2 127.0.0.1:1", "-ERR this node is not the leader\r\n"},
	} {
		if got := c.r.Do(strings.Fields(c.args)...); got != c.want {
			t.Errorf("%s: %q, want %q", c.args, got, c.want)
		}
	}

	for _, n := range nodes {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/RESP%d", n.id, proto), func(t *testing.T) {
				r := n.srv.Dial(t)
				if proto == 3 {
					r.Do("HELLO", "3")
				}
				emptyMap := "*0\r\n"
				if proto == 3 {
					emptyMap = "%0\r\n"
				}
				// CLUSTER SLOTS: one range, the leader then the followers by Raft id.
				want := "*1\r\n*" + strconv.Itoa(2+len(ordered)) + "\r\n:0\r\n:16383\r\n"
				for _, m := range ordered {
					want += "*4\r\n" + bulk("127.0.0.1") + respInt(clientPort(t, m)) + bulk(clusterID(m.id)) + emptyMap
				}
				if got := r.Do("CLUSTER", "SLOTS"); got != want {
					t.Errorf("CLUSTER SLOTS:\n got %q\nwant %q", got, want)
				}
				if got, want := r.Do("CLUSTER", "MYID"), bulk(clusterID(n.id)); got != want {
					t.Errorf("CLUSTER MYID %q, want %q", got, want)
				}
				if got := r.Do("CLUSTER", "KEYSLOT", "foo"); got != ":12182\r\n" {
					t.Errorf("CLUSTER KEYSLOT foo: %q", got)
				}
				if a, b := r.Do("CLUSTER", "KEYSLOT", "{user1}.x"), r.Do("CLUSTER", "KEYSLOT", "user1"); a != b {
					t.Errorf("hash tags: %q vs %q", a, b)
				}
				slot := strings.TrimSuffix(strings.TrimPrefix(r.Do("CLUSTER", "KEYSLOT", "user1"), ":"), "\r\n")
				if got := r.Do("CLUSTER", "COUNTKEYSINSLOT", slot); got != ":3\r\n" {
					t.Errorf("COUNTKEYSINSLOT %s: %q", slot, got)
				}
				got := r.Do("CLUSTER", "GETKEYSINSLOT", slot, "2")
				if !strings.HasPrefix(got, "*2\r\n$9\r\n{user1}.") {
					t.Errorf("GETKEYSINSLOT %s 2: %q", slot, got)
				}
				for _, c := range [][2]string{
					{"CLUSTER COUNTKEYSINSLOT 16384", "-ERR Invalid slot\r\n"},
					{"CLUSTER COUNTKEYSINSLOT x", "-ERR value is not an integer or out of range\r\n"},
					{"CLUSTER GETKEYSINSLOT 1 -1", "-ERR Invalid slot or number of keys\r\n"},
					{"CLUSTER GETKEYSINSLOT 1 0", "*0\r\n"},
					{"CLUSTER REPLICAS abc", "-ERR Unknown node abc\r\n"},
					{"CLUSTER REPLICAS " + clusterID(followers[0].id), "-ERR The specified node is not a master\r\n"},
					{"CLUSTER COUNT-FAILURE-REPORTS " + clusterID(followers[0].id), ":0\r\n"},
					{"CLUSTER LINKS", "*0\r\n"},
					{"ASKING", "+OK\r\n"},
					{"READWRITE", "+OK\r\n"},
					{"CLUSTER INFO x", "-ERR wrong number of arguments for 'cluster|info' command\r\n"},
				} {
					if got := r.Do(strings.Fields(c[0])...); got != c[1] {
						t.Errorf("%s: %q, want %q", c[0], got, c[1])
					}
				}
				if got := r.Do("CLUSTER", "ADDSLOTS", "1"); !strings.HasPrefix(got, "-ERR CLUSTER ADDSLOTS is not supported") {
					t.Errorf("CLUSTER ADDSLOTS: %q", got)
				}

				// CLUSTER INFO, a verbatim string in RESP3 as in Redis.
				info := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\n" +
					"cluster_slots_fail:0\r\ncluster_known_nodes:3\r\ncluster_size:1\r\ncluster_current_epoch:" + term +
					"\r\ncluster_my_epoch:" + term + "\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n" +
					"total_cluster_links_buffer_limit_exceeded:0\r\n"
				want = bulk(info)
				if proto == 3 {
					want = "=" + strconv.Itoa(len(info)+4) + "\r\ntxt:" + info + "\r\n"
				}
				if got := r.Do("CLUSTER", "INFO"); got != want {
					t.Errorf("CLUSTER INFO:\n got %q\nwant %q", got, want)
				}
				if got := r.Do("INFO", "cluster"); !strings.Contains(got, "# Cluster\r\ncluster_enabled:1\r\n") {
					t.Errorf("INFO cluster: %q", got)
				}

				// CLUSTER NODES: Redis's line format; only the pong time varies.
				raw := r.Do("CLUSTER", "NODES")
				text := raw[strings.Index(raw, "\r\n")+2 : len(raw)-2]
				if proto == 3 {
					if !strings.HasPrefix(raw, "=") || !strings.HasPrefix(text, "txt:") {
						t.Fatalf("CLUSTER NODES in RESP3 is not a verbatim string: %q", raw)
					}
					text = text[4:]
				}
				lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
				if len(lines) != 3 || !strings.HasSuffix(text, "\n") {
					t.Fatalf("CLUSTER NODES: %q", text)
				}
				for i, m := range ordered {
					flags, master, slots := "slave", clusterID(leader.id), ""
					if m == leader {
						flags, master, slots = "master", "-", " 0-16383"
					}
					if m == n {
						flags = "myself," + flags
					}
					re := fmt.Sprintf(`^%s 127\.0\.0\.1:%d@%d %s %s 0 \d+ %s connected%s$`, clusterID(m.id), clientPort(t, m),
						m.raftPort, flags, master, term, slots)
					if !regexp.MustCompile(re).MatchString(lines[i]) {
						t.Errorf("CLUSTER NODES line %d: %q, want %s", i, lines[i], re)
					}
				}
				// CLUSTER REPLICAS of the leader: the followers' lines, without newlines.
				reps := r.Do("CLUSTER", "REPLICAS", clusterID(leader.id))
				if !strings.HasPrefix(reps, "*2\r\n$") || !strings.Contains(reps, " slave "+clusterID(leader.id)+" ") {
					t.Errorf("CLUSTER REPLICAS: %q", reps)
				}
			})
		}
	}

	// CLUSTER SHARDS through go-redis's parser, and its RESP3 types.
	shards, err := followers[0].c.ClusterShards(ctx).Result()
	if err != nil || len(shards) != 1 || len(shards[0].Slots) != 1 || shards[0].Slots[0].End != 16383 || len(shards[0].Nodes) != 3 {
		t.Fatalf("CLUSTER SHARDS: %+v, %v", shards, err)
	}
	for i, sn := range shards[0].Nodes {
		m := ordered[i]
		role := "replica"
		if m == leader {
			role = "master"
		}
		if sn.ID != clusterID(m.id) || sn.Port != int64(clientPort(t, m)) || sn.IP != "127.0.0.1" || sn.Endpoint != "127.0.0.1" ||
			sn.Role != role || sn.Health != "online" || sn.ReplicationOffset <= 0 {
			t.Errorf("CLUSTER SHARDS node %d: %+v", i, sn)
		}
	}
	r3 := followers[0].srv.Dial(t)
	r3.Do("HELLO", "3")
	if got := r3.Do("CLUSTER", "SHARDS"); !strings.HasPrefix(got, "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*3\r\n%7\r\n$2\r\nid\r\n") {
		t.Errorf("CLUSTER SHARDS in RESP3: %q", got)
	}

	// A failover: the new leader becomes the master everywhere, the old one a replica once
	// it is back.
	leader.stop()
	rest := followers
	newLeader := waitLeader(t, rest)
	// The stopped leader is still a member: once the others' probes of its client port fail,
	// it is a failed replica, left out of CLUSTER SLOTS as Redis leaves failed replicas out.
	waitTopology(t, newLeader, rest, 2)
	for _, n := range rest {
		txt, err := n.c.ClusterNodes(ctx).Result()
		re := regexp.MustCompile(`(?m)^` + clusterID(leader.id) + ` \S+ slave,fail ` + clusterID(newLeader.id) + ` 0 \d+ \d+ disconnected$`)
		if err != nil || !re.MatchString(txt) {
			t.Errorf("%s: CLUSTER NODES does not show the stopped node as a failed replica: %q %v", n.id, txt, err)
		}
	}
	leader.start(t, false)
	newLeader = waitLeader(t, nodes) // on a loaded machine leadership may move again meanwhile
	waitTopology(t, newLeader, nodes, len(nodes))

	// A removed member leaves the topology.
	gone := otherThan(nodes, newLeader)
	if err := newLeader.c.Do(ctx, "RAFT", "REMOVE", gone.id).Err(); err != nil {
		t.Fatal(err)
	}
	var remaining []*raftNode
	for _, n := range nodes {
		if n != gone {
			remaining = append(remaining, n)
		}
	}
	waitTopology(t, newLeader, remaining, len(remaining))
	for _, n := range remaining {
		if info, _ := n.c.ClusterInfo(ctx).Result(); !strings.Contains(info, "cluster_known_nodes:2\r\n") {
			t.Errorf("%s after RAFT REMOVE: %q", n.id, info)
		}
		if nodesTxt, _ := n.c.ClusterNodes(ctx).Result(); strings.Contains(nodesTxt, clusterID(gone.id)) {
			t.Errorf("%s still lists the removed member: %q", n.id, nodesTxt)
		}
	}
}

// TestClusterFollowerReads: READONLY connections read a follower's own state, and those reads
// never change it (an expired key is reported missing, not deleted), so the replicas stay
// identical; writes are still redirected.
func TestClusterFollowerReads(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	f := otherThan(nodes, leader)
	if err := leader.c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := leader.c.Set(ctx, "e", "later", 10*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := leader.c.HSet(ctx, "h", "a", "1").Err(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, leader, nodes)

	// The follower's clock (DEBUG CLOCK is not replicated) runs an hour ahead: e has expired
	// there, not on the leader, so nothing but the follower's own reads could delete it.
	r := f.srv.Dial(t)
	if got := r.Do("DEBUG", "CLOCK", "ADVANCE", "3600000"); got != "+OK\r\n" {
		t.Fatalf("DEBUG CLOCK ADVANCE: %q", got)
	}
	moved := func(slot string) string { return "-MOVED " + slot + " " + leader.srv.Addr + "\r\n" }
	for _, c := range [][2]string{
		{"GET k", moved("7629")},
		{"READONLY", "+OK\r\n"},
		{"GET k", bulk("v")},
		{"HGET h a", bulk("1")},
		{"GET e", "$-1\r\n"},
		{"EXISTS e", ":0\r\n"},
		{"TTL e", ":-2\r\n"},
		{"SET k x", moved("7629")},
		{"DBSIZE", ":3\r\n"}, // e is still there: the follower deleted nothing
		{"MULTI", "+OK\r\n"},
		{"GET e", "+QUEUED\r\n"},
		{"GET k", "+QUEUED\r\n"},
		{"EXEC", "*2\r\n$-1\r\n" + bulk("v")},
		{"DBSIZE", ":3\r\n"},
		{"READWRITE", "+OK\r\n"},
		{"GET k", moved("7629")},
		{"READONLY", "+OK\r\n"},
		{"RESET", "+RESET\r\n"}, // RESET leaves READONLY mode, as in Redis
		{"GET k", moved("7629")},
	} {
		if got := r.Do(strings.Fields(c[0])...); got != c[1] {
			t.Errorf("%s on a follower: %q, want %q", c[0], got, c[1])
		}
	}
	if info, _ := f.c.Info(ctx, "stats").Result(); !strings.Contains(info, "\r\nexpired_keys:0\r\n") {
		t.Errorf("the follower expired keys itself: %s", info)
	}

	if got := r.Do("DEBUG", "CLOCK", "RESET"); got != "+OK\r\n" {
		t.Fatalf("DEBUG CLOCK RESET: %q", got)
	}
	if got, _ := f.c.Do(ctx, "DEBUG", "CLOCK", "GET").Int64(); got > time.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("the follower's clock stayed ahead after DEBUG CLOCK RESET: %d", got)
	}

	// go-redis ClusterClient with ReadOnly routes reads to replicas and writes to the leader.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{f.srv.Addr}, ReadOnly: true, RouteRandomly: true,
		Protocol: 2, DisableIdentity: true})
	defer cc.Close()
	waitTopology(t, leader, nodes, len(nodes))
	for i := range 20 {
		if err := cc.Set(ctx, "rk"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("ClusterClient SET: %v", err)
		}
	}
	waitApplied(t, leader, nodes)
	getsOnFollowers := func() (n int) {
		for _, m := range nodes {
			if m == leader {
				continue
			}
			st, _ := m.c.Info(ctx, "commandstats").Result()
			if i := strings.Index(st, "cmdstat_get:calls="); i >= 0 {
				v, _ := strconv.Atoi(strings.SplitN(st[i+len("cmdstat_get:calls="):], ",", 2)[0])
				n += v
			}
		}
		return n
	}
	before := getsOnFollowers()
	for i := range 20 {
		if v, err := cc.Get(ctx, "rk"+strconv.Itoa(i)).Int(); err != nil || v != i {
			t.Fatalf("ClusterClient GET rk%d: %v %v", i, v, err)
		}
	}
	// RouteRandomly spreads the reads over the three nodes: some ran on followers.
	if after := getsOnFollowers(); after <= before {
		t.Errorf("no ClusterClient read ran on a follower (GET calls there: %d before, %d after)", before, after)
	}
	want := dumpAll(t, leader)
	for _, n := range nodes {
		if n == leader {
			continue
		}
		// Follower reads changed nothing: each node, made leader in turn, holds the same bytes.
		if err := leader.c.Do(ctx, "RAFT", "TRANSFER", n.id).Err(); err != nil {
			t.Fatal(err)
		}
		leader = waitLeader(t, nodes)
		got := dumpAll(t, leader)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s differs from the first leader:\n%v\n%v", n.id, got, want)
		}
	}
}

// TestClusterStandaloneDisabled: a standalone server keeps Redis's standalone replies (the
// compat corpus compares them with a real Redis too).
func TestClusterStandaloneDisabled(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	for _, c := range []string{"CLUSTER INFO", "CLUSTER SLOTS", "CLUSTER HELP", "READONLY", "READWRITE", "ASKING", "CLUSTER KEYSLOT x"} {
		if got := r.Do(strings.Fields(c)...); got != "-ERR This instance has cluster support disabled\r\n" {
			t.Errorf("%s: %q", c, got)
		}
	}
	if got := r.Do("INFO", "cluster"); !strings.Contains(got, "cluster_enabled:0") {
		t.Errorf("INFO cluster: %q", got)
	}
}

// TestClusterAnnounceAuth: followers authenticate to the leader to announce their client
// addresses, with masteruser/masterauth, or with their own requirepass when masterauth is
// empty (the members of a group share it).
func TestClusterAnnounceAuth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"requirepass", []string{"--requirepass", "pw"}},
		{"masteruser", []string{"--requirepass", "pw", "--user", "repl on >rpw +raft|announce",
			"--masteruser", "repl", "--masterauth", "rpw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			nodes := make([]*raftNode, 3)
			for i := range nodes {
				nodes[i] = &raftNode{id: fmt.Sprintf("n%d", i+1), dir: t.TempDir(), raftPort: freePort(t), extra: tc.extra}
				nodes[i].start(t, i == 0)
				_ = nodes[i].c.Close()
				nodes[i].c = redis.NewClient(&redis.Options{Addr: nodes[i].srv.Addr, Password: "pw", Protocol: 2,
					DisableIdentity: true, MaxRetries: -1, ReadTimeout: 20 * time.Second})
			}
			waitLeader(t, nodes[:1])
			for _, nd := range nodes[1:] {
				if err := nodes[0].c.Do(ctx, "RAFT", "ADD", nd.id, "127.0.0.1:"+strconv.Itoa(nd.raftPort)).Err(); err != nil {
					t.Fatal(err)
				}
			}
			leader := waitLeader(t, nodes)
			waitTopology(t, leader, nodes, len(nodes))
			// Without credentials RAFT ANNOUNCE is refused like any other command.
			r := leader.srv.Dial(t)
			if got := r.Do("RAFT", "ANNOUNCE", "n2", "127.0.0.1:1"); !strings.HasPrefix(got, "-NOAUTH") {
				t.Errorf("RAFT ANNOUNCE without AUTH: %q", got)
			}
		})
	}
}

// TestClusterExecAfterLeadershipLoss: a transaction queued on the leader whose EXEC comes after
// leadership moved is redirected and discarded, as Redis Cluster does for EXEC, instead of
// running on what is now a follower (where its writes would reach the store but not the log,
// so that the replicas would differ).
func TestClusterExecAfterLeadershipLoss(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	next := otherThan(nodes, leader)
	r := leader.srv.Dial(t)
	slot := strings.TrimSuffix(strings.TrimPrefix(r.Do("CLUSTER", "KEYSLOT", "txk"), ":"), "\r\n")
	for _, c := range [][2]string{{"MULTI", "+OK\r\n"}, {"SET txk v", "+QUEUED\r\n"}, {"INCR txn", "+QUEUED\r\n"}} {
		if got := r.Do(strings.Fields(c[0])...); got != c[1] {
			t.Fatalf("%s: %q", c[0], got)
		}
	}
	if err := leader.c.Do(ctx, "RAFT", "TRANSFER", next.id).Err(); err != nil {
		t.Fatal(err)
	}
	if got := waitLeader(t, nodes); got != next {
		t.Fatalf("leadership went to %s, not %s", got.id, next.id)
	}
	if got, want := r.Do("EXEC"), "-MOVED "+slot+" "+next.srv.Addr+"\r\n"; got != want {
		t.Fatalf("EXEC after leadership moved: %q, want %q", got, want)
	}
	if got := r.Do("EXEC"); got != "-ERR EXEC without MULTI\r\n" {
		t.Fatalf("the transaction was not discarded: %q", got)
	}
	// The old leader's store did not take the writes: a READONLY read there finds nothing.
	for _, c := range [][2]string{{"READONLY", "+OK\r\n"}, {"GET txk", "$-1\r\n"}, {"DBSIZE", ":0\r\n"}} {
		var got string
		waitUntil(t, "the old leader to serve READONLY reads", 20*time.Second, func() bool {
			got = r.Do(strings.Fields(c[0])...)
			return !strings.HasPrefix(got, "-MOVED") && !strings.HasPrefix(got, "-CLUSTERDOWN")
		})
		if got != c[1] {
			t.Fatalf("%s on the old leader: %q, want %q", c[0], got, c[1])
		}
	}
}
