package server

import (
	"os"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Supervision modes, as Redis's supervised directive names them.
const (
	supervisedNone    = ""
	supervisedSystemd = "systemd"
	supervisedUpstart = "upstart"
)

// superviseStart picks the supervision mode at startup, as Redis's redisIsSupervised: `auto`
// means upstart when UPSTART_JOB is set, else systemd when NOTIFY_SOCKET is set. Under systemd
// it tells the manager that loading begins; a socket that cannot be written is logged and
// supervision dropped, as Redis does.
func (s *Server) superviseStart() {
	mode := s.cfg.Get("supervised")
	if mode == "auto" {
		switch {
		case os.Getenv("UPSTART_JOB") != "":
			s.log.Debug("Upstart supervision detected.")
			mode = supervisedUpstart
		case os.Getenv("NOTIFY_SOCKET") != "":
			s.log.Debug("Systemd supervision detected.")
			mode = supervisedSystemd
		}
	}
	switch mode {
	case supervisedSystemd:
		s.supervised = supervisedSystemd
		if !s.notify("STATUS=HotKV is loading...") {
			s.supervised = supervisedNone
			return
		}
		s.log.Info("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.")
	case supervisedUpstart:
		if os.Getenv("UPSTART_JOB") == "" {
			s.log.Warn("upstart supervision requested, but UPSTART_JOB not found!")
			return
		}
		s.supervised = supervisedUpstart
	}
}

// superviseReady reports readiness once the data is loaded and every listener is open:
// READY=1 to systemd, or stopping itself for upstart (which continues it).
func (s *Server) superviseReady() {
	switch s.supervised {
	case supervisedSystemd:
		s.notify("STATUS=Ready to accept connections\nREADY=1")
	case supervisedUpstart:
		s.log.Info("supervised by upstart, will stop to signal readiness.")
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		_ = os.Unsetenv("UPSTART_JOB")
	}
}

// notify sends an sd_notify message under systemd supervision and reports whether it was
// delivered; anything else is a no-op. Failures are logged, never fatal: the server works the
// same unsupervised.
func (s *Server) notify(state string) bool {
	if s.supervised != supervisedSystemd {
		return false
	}
	sent, err := daemon.SdNotify(false, state)
	switch {
	case err != nil:
		s.log.Warn("systemd supervision error: sd_notify", "err", err)
	case !sent:
		s.log.Warn("systemd supervision error: NOTIFY_SOCKET not found!")
	}
	return sent && err == nil
}

// processSupervised is INFO's process_supervised.
func (s *Server) processSupervised() string {
	if s.supervised == supervisedNone {
		return "no"
	}
	return s.supervised
}
