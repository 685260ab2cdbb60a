package pubsub

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// outbox is a connection's queue of bytes waiting for its socket: pub/sub messages, keyspace
// events and invalidations other connections push at it, and, once the connection has ever
// received such a push, its own replies too, so that everything reaches the client in the
// order it was produced.
//
// A publisher never writes a socket: it appends a chunk (shared, never copied per subscriber)
// and, when no one is writing, starts a writer goroutine that drains the queue and exits when
// it is empty. The connection's own goroutine writes synchronously (flush), after whatever was
// queued before its replies, so that a client which sends commands and does not read still
// blocks only itself. A slow reader's queue is bounded by client-output-buffer-limit: over the
// hard limit, or over the soft limit for longer than soft-seconds, the connection is closed.
type outbox struct {
	mu   sync.Mutex
	cond sync.Cond
	// queue holds the chunks not yet handed to a writer, queued their total size, and pending
	// counts queued plus the bytes a writer holds and has not finished writing: the output
	// buffer client-output-buffer-limit bounds.
	queue   [][]byte
	queued  int64
	pending int64
	// enq counts every byte ever queued and done every byte written, so that a flush waiting
	// behind a writer knows when its own bytes are out.
	enq, done int64
	// writing is set while a goroutine (the connection's or a drainer) owns the socket.
	writing bool
	closed  bool
	// softSince is when pending first went over the soft limit (Unix ms), 0 when under it.
	softSince int64
	// held keeps pushes queued without starting a drainer: the connection is blocked in a
	// command and writes them itself after its reply (see Sub.Hold).
	held bool
	// replyFirst makes the next flush write its reply before the queue and end held.
	replyFirst bool
	// wake is signalled (without blocking) when a push is queued while held.
	wake chan struct{}

	// active is set once anything went through the queue; from then on the connection flushes
	// its replies through it too.
	active atomic.Bool

	w    io.Writer
	kill func()
	// written counts the bytes written, for INFO's total_net_output_bytes.
	written *atomic.Int64
}

func (o *outbox) init(w io.Writer, kill func(), written *atomic.Int64) {
	o.cond.L = &o.mu
	o.w = w
	o.written = written
	o.kill = kill
	o.wake = make(chan struct{}, 1)
}

// enqueue appends a push. It reports false when the connection is closed or was just closed
// for going over its output buffer limits (lim), in which case the caller counts it.
func (o *outbox) enqueue(chunk []byte, lim Limit, now int64) (ok, overLimit bool) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return false, false
	}
	o.queue = append(o.queue, chunk)
	o.queued += int64(len(chunk))
	o.pending += int64(len(chunk))
	o.enq += int64(len(chunk))
	o.active.Store(true)
	if o.overLimitLocked(lim, now) {
		o.closeLocked()
		o.mu.Unlock()
		if o.kill != nil {
			o.kill()
		}
		return false, true
	}
	if !o.writing {
		if o.held {
			select {
			case o.wake <- struct{}{}:
			default:
			}
		} else {
			o.writing = true
			go o.drain()
		}
	}
	o.mu.Unlock()
	return true, false
}

// overLimitLocked applies Redis's checkClientOutputBufferLimits to the pending bytes.
func (o *outbox) overLimitLocked(lim Limit, now int64) bool {
	if lim.Hard > 0 && o.pending >= lim.Hard {
		return true
	}
	if lim.Soft > 0 && o.pending >= lim.Soft {
		if o.softSince == 0 {
			o.softSince = now
			return false
		}
		return now-o.softSince > lim.SoftSeconds*1000
	}
	o.softSince = 0
	return false
}

func (o *outbox) closeLocked() {
	o.closed = true
	clear(o.queue)
	o.queue = nil
	o.queued = 0
	o.cond.Broadcast()
}

// take moves the connection's unsent replies into the queue, behind what is queued already.
// Subscribing commands use it (under the hub lock) so that their confirmation reaches the
// client before any message the new subscription lets in.
func (o *outbox) take(reply []byte) {
	if len(reply) == 0 {
		o.active.Store(true)
		return
	}
	chunk := append([]byte(nil), reply...)
	o.mu.Lock()
	if !o.closed {
		o.queue = append(o.queue, chunk)
		o.queued += int64(len(chunk))
		o.pending += int64(len(chunk))
		o.enq += int64(len(chunk))
	}
	o.active.Store(true)
	o.mu.Unlock()
}

// flush writes everything queued and then reply, from the connection's own goroutine; it
// returns once reply is written (or failed), so a client that does not read holds up only its
// own connection. When a drainer owns the socket, reply is queued behind what it has and
// flush waits until those bytes are out: a busy channel cannot starve the replies.
func (o *outbox) flush(reply []byte) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return net.ErrClosed
	}
	if o.writing {
		if len(reply) > 0 {
			chunk := append([]byte(nil), reply...)
			o.queue = append(o.queue, chunk)
			o.queued += int64(len(chunk))
			o.pending += int64(len(chunk))
			o.enq += int64(len(chunk))
		}
		target := o.enq
		for o.done < target && !o.closed {
			o.cond.Wait()
		}
		closed := o.closed
		o.mu.Unlock()
		if closed {
			return net.ErrClosed
		}
		return nil
	}
	o.writing = true
	bufs, n := o.queue, o.queued
	o.queue, o.queued = nil, 0
	first := o.replyFirst
	if first {
		o.replyFirst, o.held = false, false
	}
	o.mu.Unlock()
	if len(reply) > 0 {
		if first {
			bufs = append([][]byte{reply}, bufs...)
		} else {
			bufs = append(bufs, reply)
		}
	}
	err := o.write(bufs)
	o.mu.Lock()
	o.pending -= n
	o.done += n
	o.writing = false
	if err != nil {
		o.closeLocked()
	} else if len(o.queue) > 0 && !o.held {
		o.writing = true
		go o.drain()
	}
	o.cond.Broadcast()
	o.mu.Unlock()
	return err
}

// drain writes queued chunks until the queue is empty, then gives the socket back.
func (o *outbox) drain() {
	for {
		o.mu.Lock()
		if o.closed || len(o.queue) == 0 || o.held {
			o.writing = false
			o.cond.Broadcast()
			o.mu.Unlock()
			return
		}
		bufs, n := o.queue, o.queued
		o.queue, o.queued = nil, 0
		o.mu.Unlock()
		err := o.write(bufs)
		o.mu.Lock()
		o.pending -= n
		o.done += n
		o.cond.Broadcast()
		if err != nil {
			o.closeLocked()
			o.writing = false
			o.mu.Unlock()
			if o.kill != nil {
				o.kill()
			}
			return
		}
		o.mu.Unlock()
	}
}

func (o *outbox) write(bufs [][]byte) error {
	if len(bufs) == 0 {
		return nil
	}
	var n int64
	var err error
	if len(bufs) == 1 {
		var m int
		m, err = o.w.Write(bufs[0])
		n = int64(m)
	} else {
		nb := net.Buffers(bufs)
		n, err = nb.WriteTo(o.w)
	}
	if o.written != nil {
		o.written.Add(n)
	}
	return err
}

// Pending is the size of the output waiting for the client, for CLIENT LIST's omem.
func (o *outbox) Pending() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending
}

func nowMs() int64 { return time.Now().UnixMilli() }
