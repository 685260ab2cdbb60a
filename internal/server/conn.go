package server

import (
	"errors"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/resp"
)

// flushThreshold bounds the reply buffer inside one read batch: a client pipelining thousands
// of large GETs gets its replies in pieces instead of growing one huge buffer.
const flushThreshold = 64 * 1024

// conn is one client connection, served by its own goroutine (ARCHITECTURE.md §1).
type conn struct {
	command.Client
	srv *Server
	nc  net.Conn
	rd  *resp.Reader
	w   *resp.Writer
	ctx command.Ctx

	killOnce sync.Once
	// writeDeadline is set while an unauthenticated client's writes are bounded (flush).
	writeDeadline bool
	// readDeadline is set while the timeout directive bounds the next read (serve).
	readDeadline bool
	// replGen is the replication loss generation when the replies in w began (raft.go), and
	// replCmds the commands whose replies are in w: all are answered TRYAGAIN if the
	// leadership their writes ran under was lost before their commit.
	replGen  uint64
	replCmds int
	// reading is set while serve waits in its read; releaseAsked, set under readMu with the
	// read deadline moved to now, asks it to release its idle query buffer (fill).
	reading      atomic.Bool
	readMu       sync.Mutex
	releaseAsked bool
}

// newConn registers a client for nc, or returns nil when maxclients are connected already
// (the check and the registration are one step, so concurrent accepts cannot overshoot).
func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc}
	c.ID = s.nextID.Add(1)
	c.Addr = nc.RemoteAddr().String()
	c.LAddr = nc.LocalAddr().String()
	c.Flags = "N"
	if s.repl != nil {
		c.replGen = s.repl.lossGen.Load()
	}
	if _, unix := nc.(*net.UnixConn); unix {
		// Redis names a Unix-socket client by the socket path and port 0, and flags it U.
		c.LAddr = nc.LocalAddr().String() + ":0"
		c.Addr = c.LAddr
		c.Flags = "U"
	}
	c.CreatedAt = time.Now()
	c.LastInteraction.Store(time.Now().UnixMilli())
	c.SetDefaultAuth(s.acl)
	c.FD = connFD(nc)
	c.rd = resp.NewReader(nc)
	c.w = resp.NewWriter()
	c.Writer = c.w
	c.Kill = c.kill
	c.ctx = command.Ctx{W: c.w, Client: &c.Client, Srv: s, Store: s.store, Hub: s.hub}
	c.Sub = s.hub.NewSub(c.ID, nc, c.kill)
	c.PubSubState = c.Sub.Subscriptions
	s.mu.Lock()
	if int64(len(s.clients)) >= s.maxClients.Load() {
		s.mu.Unlock()
		c.Sub.Close()
		return nil
	}
	s.clients[c.ID] = c
	if s.closed.Load() {
		// Accepted just as the server began closing (beginClose sets closed before it closes
		// the clients it knows under mu): close it here so Close does not wait for it.
		_ = nc.Close()
	}
	s.mu.Unlock()
	return c
}

// kill closes the connection from any goroutine; its serve loop then ends.
func (c *conn) kill() {
	c.killOnce.Do(func() {
		_ = c.nc.Close()
	})
}

// serve is the connection loop: read once, run every complete command in the buffer, write
// all their replies with one syscall (ARCHITECTURE.md §1).
func (c *conn) serve() {
	s := c.srv
	defer func() {
		s.mu.Lock()
		delete(s.clients, c.ID)
		s.mu.Unlock()
		c.Client.Release(s.store)
		_ = c.nc.Close()
	}()
	for {
		c.rd.MaxBulkLen = s.maxBulk.Load()
		// timeout closes idle clients, but not subscribers, which wait for messages, as
		// Redis exempts them (blocked clients clear the deadline while they wait).
		if t := s.timeoutSec.Load(); t > 0 && !c.Sub.Subscribed() {
			_ = c.nc.SetReadDeadline(time.Now().Add(time.Duration(t) * time.Second))
		} else if t > 0 || c.readDeadline {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		c.readDeadline = s.timeoutSec.Load() > 0 && !c.Sub.Subscribed()
		before := c.rd.Buffered()
		if err := c.fill(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.log.Debug("Closing idle client", "id", c.ID, "addr", c.Addr)
			}
			return
		}
		c.publishQueryBuf()
		s.stats.netInput.Add(int64(c.rd.Buffered() - before))
		// client-query-buffer-limit: requests received and not yet executed, including
		// a partly received command, may not grow past it (Redis closes without a reply).
		if int64(c.rd.Buffered()) > s.maxQueryBuf.Load() {
			s.log.Warn("Closing client that reached max query buffer length", "id", c.ID, "addr", c.Addr, "qbuf", c.rd.Buffered())
			return
		}
		if !c.runBatch() {
			return
		}
		c.publishQueryBuf()
	}
}

// publishQueryBuf tells CLIENT LIST what the query buffer holds (qbuf, qbuf-free).
func (c *conn) publishQueryBuf() {
	c.Conn.QueryBuf.Store(int64(c.rd.Buffered()))
	c.Conn.QueryBufCap.Store(int64(c.rd.Cap()))
}

// idleRelease is how long a connection must be idle before its empty query buffer is released,
// as Redis's clientsCronResizeQueryBuffer frees it after 2 seconds.
const idleRelease = 2 * time.Second

// fill reads once into the query buffer. The server's clientsCron may interrupt
// the read of a client idle for idleRelease by moving the read deadline into the past: fill
// then lets the empty buffer go, so that idle connections hold none, restores the deadline and
// reads again (into a buffer made when data arrives).
func (c *conn) fill() error {
	for {
		c.reading.Store(true)
		err := c.rd.Fill()
		c.readMu.Lock()
		c.reading.Store(false)
		interrupted := c.releaseAsked
		c.releaseAsked = false
		c.readMu.Unlock()
		if !interrupted {
			return err
		}
		// The cron moved the deadline: put back the one the timeout directive wants.
		if t := c.srv.timeoutSec.Load(); t > 0 && c.readDeadline {
			dl := time.UnixMilli(c.LastInteraction.Load()).Add(time.Duration(t) * time.Second)
			if !time.Now().Before(dl) {
				return os.ErrDeadlineExceeded
			}
			_ = c.nc.SetReadDeadline(dl)
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		if err == nil {
			return nil // data came in just before the cron's deadline
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		c.rd.Release()
		c.publishQueryBuf()
	}
}

// askRelease interrupts the connection's read if it is waiting for a request with an empty
// query buffer and has been idle for idleRelease (see fill).
func (c *conn) askRelease(now time.Time) {
	if _, plain := c.nc.(*net.TCPConn); !plain {
		return // a TLS read is not interrupted: its record layer is left alone
	}
	if c.Conn.QueryBufCap.Load() == 0 || c.Conn.QueryBuf.Load() != 0 ||
		now.UnixMilli()-c.LastInteraction.Load() < idleRelease.Milliseconds() {
		return
	}
	c.readMu.Lock()
	if c.reading.Load() && !c.releaseAsked {
		c.releaseAsked = true
		_ = c.nc.SetReadDeadline(now)
	}
	c.readMu.Unlock()
}

// runBatch executes every complete command buffered and flushes the replies. It returns false
// when the connection must close.
func (c *conn) runBatch() bool {
	s := c.srv
	now := s.clock.NowMs()
	c.ctx.BeginBatch()
	if s.repl != nil && c.w.Len() == 0 && !c.Gated {
		// The batch's replies begin now: a leadership lost while this connection was idle
		// does not concern them (holdForCommit would turn them into TRYAGAIN).
		c.replGen = s.repl.lossGen.Load()
	}
	n := 0
	for {
		// Until it authenticates, a client may only send small requests (Redis's limits).
		c.rd.Unauthenticated = !c.Authenticated && s.acl.AuthRequired()
		args, err := c.rd.Next()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.ctx.Error("ERR " + pe.Msg)
			}
			s.log.Debug("protocol error from client", "id", c.ID, "addr", c.Addr, "err", err)
			c.flush()
			return false
		}
		if args == nil {
			break
		}
		n++
		// The command time is read once per batch; a long batch or a DEBUG CLOCK change
		// refreshes it so that no command runs on a stale time.
		if n&1023 == 0 || c.ctx.ClockChanged {
			now = s.clock.NowMs()
			c.ctx.ClockChanged = false
		}
		c.exec(args, now)
		for c.ctx.Blocked != nil || c.ctx.Paused {
			if c.ctx.Paused && !c.waitPaused() {
				return false
			}
			if c.ctx.Blocked != nil && !c.waitBlocked() {
				return false
			}
		}
		if c.CloseAfterReply {
			s.stats.commandsProcessed.Add(int64(n))
			c.flush()
			return false
		}
		if c.w.Len() >= flushThreshold {
			if !c.flush() {
				return false
			}
			c.ctx.BeginBatch() // the write is not the next command's time
		}
	}
	s.stats.commandsProcessed.Add(int64(n))
	c.LastInteraction.Store(time.Now().UnixMilli())
	return c.flush()
}

// exec runs one command of the connection at command time now.
func (c *conn) exec(args [][]byte, now int64) {
	s := c.srv
	c.ctx.Args = args
	c.ctx.Now = now
	c.ctx.DB = s.store.DB(c.DB)
	if s.repl != nil && !s.repl.servingA.Load() {
		// A follower's clients read (READONLY) through the view that never deletes an
		// expired key: only the log changes a replica (cluster.go). The gate turns it
		// back into the live database if this node serves by then.
		c.ctx.DB = c.ctx.DB.ReadOnlyView()
	}
	s.table.Exec(&c.ctx)
	if !c.ctx.Paused {
		c.replCmds++ // a held command has no reply yet
	}
}

// beginWait prepares the connection for a command that waits (blocked, or held by CLIENT
// PAUSE): it returns a copy of the command's arguments, which point into the read buffer that
// reading meanwhile may move, lifts the timeout's read deadline (a waiting client is not idle,
// as in Redis) and marks the client blocked (the b flag, CLIENT UNBLOCK's channel); the caller
// defers c.Client.EndBlocked.
func (c *conn) beginWait() (args [][]byte, unblock <-chan bool) {
	args = make([][]byte, len(c.ctx.Args))
	for i, a := range c.ctx.Args {
		args[i] = append([]byte(nil), a...)
	}
	if c.readDeadline {
		_ = c.nc.SetReadDeadline(time.Time{})
		c.readDeadline = false
	}
	return args, c.Client.BeginBlocked()
}

// bgRead reads the connection in the background while a command waits, so that a client that
// disconnects is noticed at once; what it reads stays in the buffer for the commands after.
type bgRead struct {
	c       *conn
	done    chan error
	reading bool
}

func (c *conn) startBgRead() *bgRead {
	r := &bgRead{c: c, done: make(chan error, 1)}
	r.next()
	return r
}

func (r *bgRead) next() {
	r.reading = true
	go func() { r.done <- r.c.rd.Fill() }()
}

// got takes a read's result from done: false when the client is gone; otherwise it reads on,
// within the query buffer's bound.
func (r *bgRead) got(err error) bool {
	r.reading = false
	if err != nil {
		return false
	}
	if r.c.rd.Buffered() < 1<<20 {
		r.next()
	}
	return true
}

// stop ends a read in progress (a deadline in the past ends its Fill) and reports false if the
// client went away meanwhile.
func (r *bgRead) stop() bool {
	if !r.reading {
		return true
	}
	r.reading = false
	_ = r.c.nc.SetReadDeadline(time.Now())
	err := <-r.done
	_ = r.c.nc.SetReadDeadline(time.Time{})
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// waitPaused waits while CLIENT PAUSE holds the command that just ran (Ctx.Paused), running it
// again when the pause lifts, and reports false if the client went away meanwhile. The replies
// before it go out first. Meanwhile the connection keeps reading, as waitBlocked does: a
// client that disconnects is noticed, and its command never runs (Redis frees a paused client
// with its command); what it pipelines waits in the read buffer. The wait counts as blocked
// (INFO blocked_clients, the b flag of CLIENT LIST), and CLIENT UNBLOCK makes the command run
// again, to be held again if the pause still holds, as in Redis.
func (c *conn) waitPaused() bool {
	s := c.srv
	args, unblock := c.beginWait()
	defer c.Client.EndBlocked()
	s.table.PauseWaiting(1)
	defer s.table.PauseWaiting(-1)
	for c.ctx.Paused {
		c.ctx.Paused = false
		if !c.flush() {
			return false
		}
		if lifted, end, held := s.table.PauseWait(); held {
			d := time.Until(time.UnixMilli(end))
			if d < math.MaxInt64-time.Millisecond {
				d += time.Millisecond // past the end: the pause is then found over
			}
			t := time.NewTimer(d)
			rd := c.startBgRead()
			gone := false
		wait:
			for {
				select {
				case <-lifted:
					break wait
				case <-t.C:
					break wait
				case <-unblock:
					break wait
				case err := <-rd.done:
					if !rd.got(err) {
						gone = true
						break wait
					}
				}
			}
			t.Stop()
			if !rd.stop() || gone {
				return false
			}
		}
		c.exec(args, s.clock.NowMs())
	}
	return true
}

// flush sends the buffered replies. With appendfsync always it first waits until every effect
// appended so far is written and fsynced (group commit with the other connections), so no
// reply ever acknowledges, or shows, a write that a crash could still lose; if the log cannot
// be written the connection closes instead.
func (c *conn) flush() bool {
	if c.Sub.Active() {
		return c.flushPushes()
	}
	if c.w.Len() == 0 {
		return true
	}
	if a := c.srv.aof(); a != nil && a.always() {
		if err := a.waitDurable(); err != nil {
			return false
		}
	}
	if r := c.srv.repl; r != nil {
		c.holdForCommit(r)
	}
	// An unauthenticated client that does not read its replies is disconnected instead of
	// holding the connection (Redis closes it past 1 KB of pending output).
	if !c.Authenticated && c.srv.acl.AuthRequired() {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		c.writeDeadline = true
	} else if c.writeDeadline {
		_ = c.nc.SetWriteDeadline(time.Time{})
		c.writeDeadline = false
	}
	n, err := c.nc.Write(c.w.Buf)
	c.srv.stats.netOutput.Add(int64(n))
	c.w.Reset()
	if cap(c.w.Buf) > 1<<20 {
		c.w.Buf = nil // drop a buffer grown by one huge reply
	}
	if rb := int64(cap(c.w.Buf)); rb != c.Conn.ReplyBufCap.Load() {
		c.Conn.ReplyBufCap.Store(rb) // CLIENT LIST rbs
	}
	return err == nil
}

// waitBlocked waits for the blocking command that just ran (BLPOP and friends) to be served,
// to time out or for the client to go away, and reports false in the last case. Replies
// already buffered are sent first. While it waits the connection keeps reading, so a client
// that disconnects is noticed at once (and dequeued, so no element is handed to it), and
// commands it pipelines meanwhile wait in the read buffer, as Redis keeps them.
func (c *conn) waitBlocked() bool {
	s := c.srv
	args, unblock := c.beginWait() // the copy is for BLMOVE's retry
	defer c.Client.EndBlocked()
	for {
		w, timeoutMs := c.ctx.Blocked, c.ctx.BlockTimeoutMs
		c.ctx.Blocked = nil
		bp := w.Data.(*command.BlockedPop)
		if !c.flush() {
			s.store.Waiters.Remove(w)
			return false
		}
		var timeout <-chan time.Time
		if timeoutMs > 0 {
			t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
			defer t.Stop()
			timeout = t.C
		}
		// In Raft or cluster mode a change of what this node serves wakes the wait: a
		// client whose keys are now served elsewhere gets the redirect (topology.go). While
		// the answer is transient (an election, a slot being moved) it is asked again every
		// recheckEvery, since no further notification may come.
		var topo <-chan struct{}
		var recheck <-chan time.Time
		if s.table.Gate != nil {
			topo = s.topo.watch()
		}
		gone, served := false, false
		rd := c.startBgRead()
		c.Sub.Hold() // pushes wait, so that the reply precedes those its serving causes
	wait:
		for {
			select {
			case <-w.Ready:
				served = true
				break wait
			case <-c.Sub.Wake():
				select {
				case <-w.Ready: // served first: its reply goes before the push
					served = true
					break wait
				default:
				}
				if err := c.Sub.Flush(nil); err != nil {
					gone = true
					if s.store.Waiters.Remove(w) {
						c.Sub.Unhold()
						return false
					}
					<-w.Ready
					served = true
					break wait
				}
			case <-timeout:
				if s.store.Waiters.Remove(w) {
					bp.TimeoutReply(c.w)
				} else {
					<-w.Ready // served just now
					served = true
				}
				break wait
			case <-topo:
				topo = s.topo.watch()
				recheck = time.After(0)
			case <-recheck:
				recheck = nil
				msg, transient := c.blockedGate(args)
				switch {
				case msg == "":
				case transient:
					recheck = time.After(recheckEvery)
				case !s.store.Waiters.Remove(w):
					<-w.Ready // served just now
					served = true
					break wait
				default:
					// Nothing was written for this command, and the replies before it went
					// out before it blocked: the redirect waits for no commit (a lost
					// leadership would otherwise turn it into TRYAGAIN).
					c.Gated = false
					c.ctx.BlockedError(msg)
					break wait
				}
			case withError := <-unblock: // CLIENT UNBLOCK
				switch {
				case !s.store.Waiters.Remove(w):
					<-w.Ready // served just now
					served = true
				case withError:
					c.ctx.BlockedError("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				default:
					bp.TimeoutReply(c.w)
				}
				break wait
			case err := <-rd.done:
				if !rd.got(err) {
					gone = true
					if s.store.Waiters.Remove(w) {
						return false
					}
					<-w.Ready
					served = true
					break wait
				}
			}
		}
		if !rd.stop() {
			gone = true
		}
		c.Sub.Unhold()
		if !gone && !(served && bp.Retry) {
			// Its reply goes out now: the slow log and latency histogram take it (a retried
			// command is timed when it runs again).
			s.table.AfterBlocked(&c.ctx, args, c.ctx.BlockedNs())
		}
		if served {
			c.w.Raw(bp.Reply())
			// What served it (a push, by another client) journaled the pop: in Raft mode
			// the reply waits for that commit, as the pusher's does, or becomes TRYAGAIN if
			// leadership is lost first.
			c.Gated = true
		}
		if gone {
			c.flush()
			return false
		}
		if bp.Retry {
			c.ctx.Args = args
			c.ctx.Now = s.clock.NowMs()
			c.ctx.Resume = bp
			s.table.Exec(&c.ctx)
			c.ctx.Resume = nil
			if c.ctx.Blocked != nil {
				continue
			}
		}
		return true
	}
}

// flushPushes is flush for a connection that receives pushes (pub/sub messages, keyspace
// events, invalidations): its replies go out through its outbox, after the pushes queued
// before them (pubsub.Sub.Flush).
func (c *conn) flushPushes() bool {
	if c.w.Len() > 0 {
		if a := c.srv.aof(); a != nil && a.always() {
			if err := a.waitDurable(); err != nil {
				return false
			}
		}
		if r := c.srv.repl; r != nil {
			c.holdForCommit(r)
		}
	}
	err := c.Sub.Flush(c.w.Buf)
	c.w.Reset()
	if cap(c.w.Buf) > 1<<20 {
		c.w.Buf = nil
	}
	return err == nil
}

// connFD is the connection's file descriptor, for CLIENT LIST fd (0 when there is none).
func connFD(nc net.Conn) int {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = tc.NetConn() // TLS: the socket under it
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	fd := 0
	_ = rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}
