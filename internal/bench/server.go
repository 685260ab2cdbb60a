package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/freeport"
)

// Proc is a server process the suite started.
type Proc struct {
	Name string
	Addr string
	// Redis is true for the Redis side of a comparison (it gets Workload.Redis commands).
	Redis bool
	cmd   *exec.Cmd
	dir   string
	log   *os.File
}

// freePort asks the kernel for a free loopback port, one this process has not handed out
// before (a cluster's client, Raft and meta ports are picked one after another).
func freePort() (int, error) { return freeport.Get() }

// RaiseFileLimit lifts this process's open-file limit to its hard limit before servers are
// started, so they (which inherit it) and the load generator can hold ten thousand
// connections. Setting it explicitly also stops Go from restoring the original soft limit in
// child processes.
func RaiseFileLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	r.Cur = r.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	return r.Cur, nil
}

// StartHotKV starts bin at a free port with persistence off (so both sides of a comparison do
// the same work) and env added to its environment (GOMAXPROCS=1, say).
func StartHotKV(ctx context.Context, name, bin string, env []string, extra ...string) (*Proc, error) {
	args := []string{"--bind", "127.0.0.1", "--appendonly", "no", "--save", "", "--loglevel", "warning", "--maxclients", "19000"}
	return start(ctx, name, bin, false, env, append(args, extra...))
}

// StartRedis starts redis-server the same way.
func StartRedis(ctx context.Context, name, bin string, extra ...string) (*Proc, error) {
	args := []string{"--bind", "127.0.0.1", "--appendonly", "no", "--save", "", "--loglevel", "warning", "--maxclients", "19000"}
	return start(ctx, name, bin, true, nil, append(args, extra...))
}

func start(ctx context.Context, name, bin string, isRedis bool, env, args []string) (*Proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hotkv-bench-")
	if err != nil {
		return nil, err
	}
	p, err := launch(ctx, name, bin, isRedis, env, dir, port, args)
	if err != nil {
		os.RemoveAll(dir)
	}
	return p, err
}

// launch starts bin with --port port --dir dir (its log appended to dir/server.log) and waits
// until it answers PING. A Raft node is launched again in the same dir after a kill.
func launch(ctx context.Context, name, bin string, isRedis bool, env []string, dir string, port int, args []string) (*Proc, error) {
	log, err := os.OpenFile(dir+"/server.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args = append([]string{"--port", strconv.Itoa(port), "--dir", dir}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Proc{Name: name, Addr: fmt.Sprintf("127.0.0.1:%d", port), Redis: isRedis, cmd: cmd, dir: dir, log: log}
	c := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.kill()
			out, _ := os.ReadFile(dir + "/server.log")
			return nil, fmt.Errorf("%s did not answer PING on %s: %s", bin, p.Addr, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CPUTime is the server process's user and system CPU time so far, from /proc: on a shared
// machine the CPU a server spends per request is steadier than its throughput, which
// depends on how much CPU the load generator and the neighbours leave it.
func (p *Proc) CPUTime() (user, sys time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the parenthesised command name; utime and stime are fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("short /proc stat: %q", s)
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(u) * tick, time.Duration(st) * tick, nil
}

// Stop kills the server and removes its directory.
func (p *Proc) Stop() {
	p.kill()
	os.RemoveAll(p.dir)
}

// kill sends SIGKILL and reaps the process, keeping its directory.
func (p *Proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
	p.log.Close()
}

// Version is the server's INFO server version line (redis_version / hotkv_version).
func Version(ctx context.Context, addr string) string {
	info, err := Info(ctx, addr, "server")
	if err != nil {
		return "?"
	}
	if v := info["hotkv_version"]; v != "" {
		return "HotKV " + v
	}
	return "Redis " + info["redis_version"]
}

// Info returns one INFO section's fields.
func Info(ctx context.Context, addr, section string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// Do runs one command on a fresh connection.
func Do(ctx context.Context, addr string, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, ReadTimeout: 5 * time.Minute})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}
