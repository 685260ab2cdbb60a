package bench

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// epollEngine says Run drives closed-loop runs with event loops (runLoops).
const epollEngine = true

// takeFds turns each worker's connection into a raw non-blocking socket of its own: a
// duplicate of the descriptor, and the net.Conn closed, which takes the socket out of Go's
// netpoller (it would otherwise wake on every reply too).
func takeFds(ws []*worker) error {
	for _, w := range ws {
		sc, ok := w.conn.(syscall.Conn)
		if !ok {
			return fmt.Errorf("connection %T has no descriptor", w.conn)
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return err
		}
		var derr error
		if err := rc.Control(func(fd uintptr) {
			nfd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
			if errno != 0 {
				derr = errno
				return
			}
			w.fd = int(nfd)
		}); err != nil {
			return err
		}
		if derr != nil {
			return fmt.Errorf("dup: %w", derr)
		}
		w.conn.Close()
		w.conn = nil
		if err := syscall.SetNonblock(w.fd, true); err != nil {
			return err
		}
	}
	return nil
}

func closeFds(ws []*worker) {
	for _, w := range ws {
		if w.fd >= 0 {
			syscall.Close(w.fd)
			w.fd = -1
		}
	}
}

// runLoops drives the workers with one epoll loop per GOMAXPROCS (at most one per connection),
// each owning every n-th connection.
func runLoops(rn *run, ws []*worker) {
	n := min(runtime.GOMAXPROCS(0), len(ws))
	var wg sync.WaitGroup
	for l := range n {
		var mine []*worker
		for i := l; i < len(ws); i += n {
			mine = append(mine, ws[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rn.loop(mine); err != nil {
				rn.fail(err)
			}
		}()
	}
	wg.Wait()
}

// loop is one event loop: level-triggered, so one read per readable event is enough (what is
// left is reported again), and a connection's next batch is written as soon as its last reply
// is parsed, with no goroutine woken in between.
func (rn *run) loop(ws []*worker) error {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	defer syscall.Close(ep)
	active := 0
	// send starts w's next batch; false when w is finished (taken out of the loop).
	send := func(i int, w *worker) (bool, error) {
		if !rn.next(w, time.Time{}, time.Time{}) {
			return false, syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, w.fd, nil)
		}
		return true, rn.write(ep, i, w)
	}
	for i, w := range ws {
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, w.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)}); err != nil {
			return fmt.Errorf("epoll_ctl: %w", err)
		}
		ok, err := send(i, w)
		if err != nil {
			return err
		}
		if ok {
			active++
		}
	}
	evs := make([]syscall.EpollEvent, min(len(ws), 256))
	for active > 0 && !rn.done.Load() {
		// The timeout only bounds how late a cancelled run notices.
		n, err := syscall.EpollWait(ep, evs, 50)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range evs[:n] {
			i := int(ev.Fd)
			w := ws[i]
			if ev.Events&syscall.EPOLLOUT != 0 && w.off < len(w.buf) {
				if err := rn.write(ep, i, w); err != nil {
					return err
				}
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
				continue
			}
			m, err := syscall.Read(w.fd, w.in.space())
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			if err == nil && m == 0 {
				err = io.EOF
			}
			if err != nil {
				if rn.done.Load() {
					return nil
				}
				return fmt.Errorf("read: %w", err)
			}
			w.in.w += m
			complete, err := rn.got(w, time.Now())
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			if !complete {
				continue
			}
			ok, err := send(i, w)
			if err != nil {
				return err
			}
			if !ok {
				active--
			}
		}
	}
	return nil
}

// write writes what is left of w's batch; when the socket's buffer is full it waits for
// EPOLLOUT on it, and stops waiting once the batch is out.
func (rn *run) write(ep, i int, w *worker) error {
	for w.off < len(w.buf) {
		m, err := syscall.Write(w.fd, w.buf[w.off:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			if w.waitOut {
				return nil
			}
			w.waitOut = true
			return syscall.EpollCtl(ep, syscall.EPOLL_CTL_MOD, w.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT, Fd: int32(i)})
		}
		if err != nil {
			if rn.done.Load() {
				return nil
			}
			return fmt.Errorf("write: %w", err)
		}
		w.off += m
	}
	if w.waitOut {
		w.waitOut = false
		return syscall.EpollCtl(ep, syscall.EPOLL_CTL_MOD, w.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)})
	}
	return nil
}
