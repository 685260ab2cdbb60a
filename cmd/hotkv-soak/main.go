// Command hotkv-soak is the security issue's soak program: many connections, slow readers and a
// pipeline flood against a running server with a memory limit, checking that its resident
// memory stays bounded by maxmemory plus what its buffer limits allow.
//
// Three kinds of client run at once for -duration:
//   - -conns idle-ish clients, each sending a GCRA.LIMIT or SET now and then (connection count
//     pressure: file descriptors, goroutines, per-connection buffers);
//   - -slow slow readers: each pipelines GETs of a large value and never reads a reply, so
//     the server's replies to it pile up wherever the server lets them;
//   - -flood flooders: each writes pipelines of SETs of new keys as fast as it can and reads the
//     replies, pushing the dataset against maxmemory (the server must evict or refuse with OOM).
//
// Every second it samples the server's INFO (used_memory, used_memory_rss, connected_clients,
// evicted_keys) and prints a line. The requirement: the largest RSS seen stays under
// maxmemory + -allowance (default 512 MB: the Go runtime, the per-connection buffers of the
// clients, the slow readers' socket buffers), and the server still answers PING at the end.
// Point it at Redis with -addr for a side by side comparison.
//
// Exit status: 0 pass, 1 the requirement failed, 2 the soak could not run.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	conns := flag.Int("conns", 10000, "ordinary connections")
	slow := flag.Int("slow", 200, "slow readers (never read their replies)")
	flood := flag.Int("flood", 8, "flooding connections (pipelined SETs of new keys)")
	duration := flag.Duration("duration", 60*time.Second, "how long to soak")
	maxmemory := flag.Int64("maxmemory", 256<<20, "maxmemory to set on the server (0: leave it)")
	allowance := flag.Int64("allowance", 512<<20, "RSS allowed above maxmemory")
	flag.Parse()

	ctl, err := dial(*addr)
	if err != nil {
		fail(2, "connect: %v", err)
	}
	if *maxmemory > 0 {
		must(ctl.do("CONFIG", "SET", "maxmemory", strconv.FormatInt(*maxmemory, 10)))
		must(ctl.do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"))
	}
	must(ctl.do("SET", "soak:big", strings.Repeat("x", 512<<10)))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops, refused, dialErrs atomic.Int64
	start := func(n int, fn func(c *client)) {
		for i := 0; i < n; i++ {
			c, err := dial(*addr)
			if err != nil {
				dialErrs.Add(1)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.nc.Close()
				fn(c)
			}()
		}
	}
	// Ordinary clients: one command every 100 ms or so.
	start(*conns, func(c *client) {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			var err error
			if i%2 == 0 {
				_, err = c.do("GCRA.LIMIT", "soak:rl:"+strconv.Itoa(i%1000), "1000", "100")
			} else {
				_, err = c.do("SET", "soak:k:"+strconv.Itoa(i%1000), "v")
			}
			if err != nil {
				return
			}
			ops.Add(1)
		}
	})
	// Slow readers: pipeline GETs of the 512 KB value, never read.
	start(*slow, func(c *client) {
		req := []byte(strings.Repeat("*2\r\n$3\r\nGET\r\n$8\r\nsoak:big\r\n", 64))
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.nc.Write(req); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					continue // the server stopped reading us: exactly what it should do
				}
				return
			}
		}
	})
	// Flooders: pipelines of 100 SETs of new 1 KB values, replies read.
	start(*flood, func(c *client) {
		val := strings.Repeat("v", 1024)
		var b strings.Builder
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			b.Reset()
			for j := 0; j < 100; j++ {
				key := "soak:f:" + strconv.Itoa(n*100+j) + ":" + strconv.Itoa(int(time.Now().UnixNano()%1000))
				fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(val), val)
			}
			if _, err := c.nc.Write([]byte(b.String())); err != nil {
				return
			}
			for j := 0; j < 100; j++ {
				line, err := c.rd.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(line, "-OOM") {
					refused.Add(1)
				}
				ops.Add(1)
			}
		}
	})
	fmt.Printf("soak: %d ordinary, %d slow readers, %d flooders (%d could not connect), maxmemory %d MB, %s\n",
		*conns, *slow, *flood, dialErrs.Load(), *maxmemory>>20, *duration)

	var maxRSS, maxUsed int64
	deadline := time.Now().Add(*duration)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		info, err := ctl.do("INFO")
		if err != nil {
			fail(1, "INFO failed during the soak: %v", err)
		}
		rss, used := field(info, "used_memory_rss"), field(info, "used_memory")
		maxRSS, maxUsed = max(maxRSS, rss), max(maxUsed, used)
		fmt.Printf("rss %4d MB  used %4d MB  clients %6d  evicted %8d  ops %9d  oom %7d\n",
			rss>>20, used>>20, field(info, "connected_clients"), field(info, "evicted_keys"), ops.Load(), refused.Load())
	}
	close(stop)
	wg.Wait()
	if reply, err := ctl.do("PING"); err != nil || !strings.HasPrefix(reply, "+PONG") {
		fail(1, "the server does not answer PING after the soak: %q %v", reply, err)
	}
	if *maxmemory > 0 {
		_, _ = ctl.do("CONFIG", "SET", "maxmemory", "0")
	}
	fmt.Printf("soak: max RSS %d MB, max used_memory %d MB (maxmemory %d MB + allowance %d MB)\n",
		maxRSS>>20, maxUsed>>20, *maxmemory>>20, *allowance>>20)
	if *maxmemory > 0 && maxRSS > *maxmemory+*allowance {
		fail(1, "RSS went past maxmemory + allowance")
	}
	fmt.Println("soak: PASS")
}

// client is a raw RESP connection: commands out, simple replies in.
type client struct {
	nc net.Conn
	rd *bufio.Reader
}

func dial(addr string) (*client, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &client{nc: nc, rd: bufio.NewReader(nc)}, nil
}

// do sends one command and returns its reply as text (bulk replies read whole).
func (c *client) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.nc.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return c.reply()
}

func (c *client) reply() (string, error) {
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.rd, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		var parts []string
		for i := 0; i < n; i++ {
			p, err := c.reply()
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " "), nil
	}
	return line, nil
}

// field reads an integer field of an INFO reply.
func field(info, name string) int64 {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func must(_ string, err error) {
	if err != nil {
		fail(2, "%v", err)
	}
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...)
	os.Exit(code)
}
