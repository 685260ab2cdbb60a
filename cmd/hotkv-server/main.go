// Command hotkv-server runs HotKV.
//
// Usage mirrors redis-server: hotkv-server [/path/to/hotkv.conf] [--name value ...]. Every
// config directive is accepted as a flag; see docs/config.md.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/server"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	if len(argv) == 1 && (argv[0] == "-v" || argv[0] == "--version") {
		fmt.Printf("HotKV server v=%s (Redis %s compatible)\n", server.Version, server.RedisVersion)
		return 0
	}
	if len(argv) == 1 && (argv[0] == "-h" || argv[0] == "--help") {
		fmt.Println("Usage: hotkv-server [/path/to/hotkv.conf] [--name value ...]\n" +
			"       hotkv-server --check-aof <dir-or-file> [--fix]\n" +
			"       hotkv-server --check-health [host:port] [--user name]\n\n" +
			"Every directive of docs/config.md is accepted as --name value. --check-aof verifies an\n" +
			"append-only log (its directory, the dir holding appendonlydir, a manifest or a segment);\n" +
			"--fix cuts a torn last frame off. See docs/persistence.md. --check-health sends PING to\n" +
			"a running server (127.0.0.1:6379 by default, AUTH first with the password in\n" +
			"REDISCLI_AUTH) and exits 0 on PONG, 1 otherwise: a container health check.")
		return 0
	}
	if len(argv) > 0 && argv[0] == "--check-aof" {
		return checkAOF(argv[1:])
	}
	if len(argv) > 0 && argv[0] == "--check-health" {
		return checkHealth(argv[1:])
	}
	cfg, err := config.Load(config.Directives(), argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	daemon := os.Getenv(daemonEnv) != ""
	if cfg.GetBool("daemonize") && !daemon {
		return daemonize(argv)
	}
	// Like redis-server, work inside dir so that relative paths (logs, snapshots) land there,
	// and report dir as the absolute working directory from then on (CONFIG GET dir), which
	// is also where the server reads and writes its snapshot.
	if dir := cfg.Get("dir"); dir != "" && dir != "." {
		if dir == cfg.Lookup("dir").Default {
			_ = os.MkdirAll(dir, 0o755) // the default data dir is made on first start
		}
		if err := os.Chdir(dir); err != nil {
			fmt.Fprintf(os.Stderr, "Can't chdir to '%s': %v\n", dir, err)
			return 1
		}
	}
	if wd, err := os.Getwd(); err == nil {
		_ = cfg.Set([][2]string{{"dir", wd}}, false)
	}
	logger, closeLog, err := server.NewLogger(cfg.Get("logfile"), cfg.Get("loglevel"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeLog()
	stopProfiles, err := startProfiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopProfiles()
	srv := server.New(cfg, logger)
	// Catch SIGTERM/SIGINT before the listeners open: a client may connect and a supervisor
	// may signal as soon as the port answers, and the default action would kill the process
	// without the final save.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// SIGHUP reloads the Envoy rate limit service's configuration (rls-config), as
	// envoyproxy/ratelimit picks up a changed file; Redis ignores SIGHUP, and so does a server
	// without the service.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if srv.RLSService() == nil {
				continue
			}
			if err := srv.ReloadRLS(""); err != nil {
				logger.Warn("SIGHUP: the rate limit configuration was not reloaded", "err", err)
			}
		}
	}()
	// A signal while the data loads stops the load and the server without a save, as Redis
	// exits when signalled during its load (the data is half loaded). One that comes before or
	// after the load goes back to sig, for waitForShutdown.
	loaded := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			if srv.StopLoading() {
				logger.Warn("Received signal during loading, exiting without saving", "signal", s.String())
				return
			}
			sig <- s
		case <-loaded:
		}
	}()
	err = srv.Start()
	close(loaded)
	if err != nil {
		logger.Error(err.Error())
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pf := cfg.Get("pidfile")
	if pf == "" && daemon {
		pf = defaultDaemonPidfile // Redis writes /var/run/redis.pid when daemonized
	}
	if pf != "" {
		if err := os.WriteFile(pf, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
			logger.Warn("Failed to write PID file", "pidfile", pf, "err", err)
		} else {
			defer os.Remove(pf)
		}
	}
	if !waitForShutdown(srv, sig, logger) {
		return 1
	}
	logger.Warn("HotKV is now ready to exit, bye bye...")
	return 0
}

// daemonEnv marks the process daemonize started, which must not start another.
const daemonEnv = "HOTKV_DAEMONIZED"

// defaultDaemonPidfile is the pidfile of a daemonized server that names none.
const defaultDaemonPidfile = "/var/run/hotkv.pid"

// daemonize implements `daemonize yes`: the same command, with the same arguments, starts
// again as a new process in a session of its own with standard input, output and error on
// /dev/null, and this one exits 0 at once, as redis-server's fork does. (A Go process cannot
// fork without exec: its runtime's threads do not survive fork.)
func daemonize(argv []string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemonize:", err)
		return 1
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemonize:", err)
		return 1
	}
	defer null.Close()
	cmd := exec.Command(exe, argv...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "daemonize:", err)
		return 1
	}
	_ = cmd.Process.Release()
	return 0
}

// waitForShutdown serves until SHUTDOWN or a signal. A signal shuts down as SHUTDOWN with the
// flags of shutdown-on-sigterm or shutdown-on-sigint does (by default as SHUTDOWN without
// arguments: with save points configured the final snapshot is written first). If that save
// fails the server keeps running, as Redis does; a second SIGINT then exits at once without
// saving, and waitForShutdown reports false.
func waitForShutdown(srv *server.Server, sig <-chan os.Signal, logger *slog.Logger) bool {
	failed := false
	for {
		select {
		case s := <-sig:
			if failed && s == syscall.SIGINT {
				logger.Warn("You insist... exiting now.")
				return false
			}
			logger.Warn("Received signal, scheduling shutdown...", "signal", s.String())
			if err := srv.ShutdownOnSignal(s == syscall.SIGINT); err != nil {
				failed = true
				logger.Warn("Signal received but errors trying to shut down the server, check the logs for more information", "signal", s.String(), "err", err)
				continue
			}
			return true
		case <-srv.Done():
			return true
		}
	}
}

// checkAOF runs `hotkv-server --check-aof <path> [--fix]` (the flag may also come first).
func checkAOF(args []string) int {
	fix := false
	var paths []string
	for _, a := range args {
		if a == "--fix" {
			fix = true
		} else {
			paths = append(paths, a)
		}
	}
	if len(paths) != 1 {
		fmt.Fprintln(os.Stderr, "Usage: hotkv-server --check-aof <dir-or-file> [--fix]")
		return 1
	}
	return server.CheckAOF(os.Stdout, paths[0], fix)
}

// startProfiles starts the CPU profile named by HOTKV_CPUPROFILE and arranges the heap
// profile named by HOTKV_MEMPROFILE, both written when the server shuts down cleanly
// (SHUTDOWN, SIGTERM, SIGINT). They are environment variables rather than directives because
// they are for profiling a build under load (docs/benchmarks.md), not for running one.
func startProfiles() (stop func(), err error) {
	cpu, mem := os.Getenv("HOTKV_CPUPROFILE"), os.Getenv("HOTKV_MEMPROFILE")
	var cpuFile *os.File
	if cpu != "" {
		if cpuFile, err = os.Create(cpu); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			return nil, err
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			cpuFile.Close()
		}
		if mem != "" {
			if f, err := os.Create(mem); err == nil {
				runtime.GC()
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}, nil
}
