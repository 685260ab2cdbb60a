package testserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Cluster is a sharded HotKV cluster started by the repository's scripts/cluster-demo.sh:
// shards of nodes each, every shard a Raft group, the slots spread evenly.
type Cluster struct {
	// Addrs are the nodes' client addresses, node 1 first.
	Addrs []string
	root  string
	dir   string // the temporary directory holding the script's DEMO_DIR
	env   []string
}

// StartCluster starts a cluster of shards x nodes on a free range of loopback ports (the
// script's BASE: clients BASE+i, Raft BASE+100+i, meta group BASE+10100+i). It needs
// redis-cli, which the script uses. The caller must Stop it.
func StartCluster(shards, nodes int) (*Cluster, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hotkv-client-cluster-")
	if err != nil {
		return nil, err
	}
	total := shards * nodes
	var lastErr error
	for range 5 {
		base := 10000 + rand.IntN(9000)
		if !portsFree(base, total) {
			continue
		}
		c := &Cluster{root: root, dir: dir, env: append(os.Environ(), "BASE="+strconv.Itoa(base), "SHARDS="+strconv.Itoa(shards),
			"NODES="+strconv.Itoa(nodes), "DEMO_DIR="+filepath.Join(dir, "demo"))}
		for i := 1; i <= total; i++ {
			c.Addrs = append(c.Addrs, "127.0.0.1:"+strconv.Itoa(base+i))
		}
		out, err := c.script("start")
		if err == nil {
			return c, nil
		}
		lastErr = fmt.Errorf("cluster-demo.sh: %v\n%s", err, out)
		_, _ = c.script("clean")
	}
	os.RemoveAll(dir)
	if lastErr == nil {
		lastErr = fmt.Errorf("no free range of ports for a %d-node cluster", total)
	}
	return nil, lastErr
}

func (c *Cluster) script(arg string) ([]byte, error) {
	cmd := exec.Command("bash", "scripts/cluster-demo.sh", arg)
	cmd.Dir, cmd.Env = c.root, c.env
	return cmd.CombinedOutput()
}

// Stop stops every node and deletes their data and the temporary directory that held it.
func (c *Cluster) Stop() {
	_, _ = c.script("clean")
	os.RemoveAll(c.dir)
}

// portsFree reports whether the ports a cluster of n nodes at base needs can be bound now.
func portsFree(base, n int) bool {
	for i := 1; i <= n; i++ {
		for _, p := range []int{base + i, base + 100 + i, base + 10100 + i} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				return false
			}
			_ = ln.Close()
		}
	}
	return true
}
