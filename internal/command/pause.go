package command

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/script"
)

// CLIENT PAUSE's modes, ordered by how much they hold (Redis's pause_type).
const (
	pauseOff int32 = iota
	pauseWrite
	pauseAll
)

// clientPause is CLIENT PAUSE's state (Redis's pause event for PAUSE_BY_CLIENT_COMMAND). The
// mode is read with one atomic load per command; the rest only while a pause is on.
type clientPause struct {
	mode atomic.Int32
	mu   sync.Mutex
	// end is when the pause lifts by itself (Unix ms, wall clock as Redis's mstime); lifted is
	// closed, and replaced, when it is lifted early (CLIENT UNPAUSE) or found expired.
	end    int64
	lifted chan struct{}
	// waiting counts the connections held by it, for INFO blocked_clients.
	waiting atomic.Int64
}

// pause starts or extends the pause, as Redis's pauseClients: the stricter mode and the later
// end of the pause in force and the new one.
func (p *clientPause) pause(endMs int64, mode int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now().UnixMilli()
	if !p.expireLocked(now) {
		p.end = 0 // a pause over already, lifted or not yet found expired, counts for nothing
	}
	p.end = max(p.end, endMs)
	p.mode.Store(max(p.mode.Load(), mode))
	p.expireLocked(now)
}

// unpause lifts the pause (CLIENT UNPAUSE): every held connection runs its command again.
func (p *clientPause) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.liftLocked()
}

func (p *clientPause) liftLocked() {
	p.mode.Store(pauseOff)
	p.end = 0
	if p.lifted != nil {
		close(p.lifted)
		p.lifted = nil
	}
}

// expireLocked lifts a pause whose end has passed (Redis's
// checkClientPauseTimeoutAndReturnIfPaused) and reports whether one is still on.
func (p *clientPause) expireLocked(now int64) bool {
	if p.mode.Load() == pauseOff {
		return false
	}
	if p.end < now {
		p.liftLocked()
		return false
	}
	return true
}

// active reports whether clients are paused now, in either mode: while they are, keys are
// neither expired nor evicted, so that the dataset stays as it was (Redis's
// isSafeToPerformEvictions and expireIfNeeded).
func (p *clientPause) active() bool {
	if p.mode.Load() == pauseOff {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.expireLocked(time.Now().UnixMilli())
}

// hold reports whether a command in mode must wait (every command with ALL; with WRITE those
// that may write or replicate), and returns the channel closed when the pause is lifted early
// and its end.
func (p *clientPause) hold(mayWrite bool) (lifted <-chan struct{}, endMs int64, held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.expireLocked(time.Now().UnixMilli()) {
		return nil, 0, false
	}
	if p.mode.Load() == pauseWrite && !mayWrite {
		return nil, 0, false
	}
	if p.lifted == nil {
		p.lifted = make(chan struct{})
	}
	return p.lifted, p.end, true
}

// PauseActive reports whether CLIENT PAUSE holds clients now; expiry and eviction wait while
// it does.
func (t *Table) PauseActive() bool { return t.pause.active() }

// PausedClients is the number of connections waiting for the end of a CLIENT PAUSE, which
// Redis counts in INFO blocked_clients.
func (t *Table) PausedClients() int64 { return t.pause.waiting.Load() }

// PauseWait is for a connection whose command CLIENT PAUSE holds (Ctx.Paused): it returns the
// channel closed if the pause is lifted early and the pause's end (Unix ms), or ok false if
// the pause is over already. The connection runs the command again when either comes; it
// may be held again, by a pause extended meanwhile. Begin and end the wait with
// PauseWaiting(1) and PauseWaiting(-1).
func (t *Table) PauseWait() (lifted <-chan struct{}, endMs int64, ok bool) {
	return t.pause.hold(true)
}

// PauseWaiting counts a connection into (1) or out of (-1) the held ones.
func (t *Table) PauseWaiting(d int64) { t.pause.waiting.Add(d) }

// pauses reports whether CLIENT PAUSE holds cmd for this client now, and whether a pause is
// on at all (a command it lets through runs without expiring keys). Redis holds every command
// under ALL, and under WRITE those that may write or replicate: commands flagged write or
// may_replicate (PUBLISH, PFCOUNT), an EXEC whose transaction queued one, and EVAL, EVALSHA
// and FCALL unless the script declares no-writes. The server's own log applier is never held:
// a Raft follower keeps applying what its group committed.
func (t *Table) pauses(c *Ctx, cmd *Command) (held, on bool) {
	if c.Client.LogApplier || c.inScript {
		return false, false
	}
	p := &t.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.expireLocked(time.Now().UnixMilli()) {
		return false, false
	}
	return p.mode.Load() == pauseAll || mayReplicate(c, cmd), true
}

// mayReplicate is Redis's is_may_replicate_command, with the flags a script declares taking
// the place of its command's (evalGetCommandFlags).
func mayReplicate(c *Ctx, cmd *Command) bool {
	if cmd.mayReplicate() {
		return true
	}
	if cmd.Name == "exec" && cmd.parent == nil {
		for _, q := range c.Client.multi.queue {
			if q.cmd.mayReplicate() || (q.cmd.RunsScript && scriptMayWrite(c, q.cmd, q.args)) {
				return true
			}
		}
		return false
	}
	return cmd.RunsScript && scriptMayWrite(c, cmd, c.Args)
}

// scriptMayWrite reports whether a script command may write: the _RO forms never do, EVAL's
// body and EVALSHA's cached script by their shebang flags (none: compatible mode, which may),
// FCALL by its function's flags. A script or function not found may (it fails when it runs).
func scriptMayWrite(c *Ctx, cmd *Command, args [][]byte) bool {
	if cmd.Flags&FlagReadOnly != 0 || len(args) < 2 {
		return false
	}
	s := c.Srv.Table().Scripting()
	var flags script.Flags
	switch cmd.Name {
	case "eval":
		f, _, err := script.ParseShebang(args[1])
		if err != "" {
			return true
		}
		flags = f
	case "evalsha":
		e := s.lookupScript(args[1])
		if e == nil {
			return true
		}
		flags = e.flags
	case "fcall":
		s.libMu.RLock()
		f := s.funcs[strings.ToLower(string(args[1]))]
		s.libMu.RUnlock()
		if f == nil {
			return true
		}
		flags = f.f.Flags
	default:
		return true
	}
	return flags&script.FlagEvalCompat != 0 || flags&script.FlagNoWrites == 0
}
