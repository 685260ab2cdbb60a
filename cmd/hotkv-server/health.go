package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// healthTimeout bounds a whole health check: a server that cannot answer PING in this time is
// not healthy, and a container runtime must not pile checks up.
const healthTimeout = 3 * time.Second

// checkHealth runs `hotkv-server --check-health [host:port] [--user name]`: it sends PING to
// the server and exits 0 on PONG, 1 otherwise, with the reason on standard error. It exists
// for container HEALTHCHECKs, since a minimal image has no redis-cli. The password comes from
// REDISCLI_AUTH (redis-cli's variable), never from the command line, where ps would show it;
// with it the check authenticates first (as --user, default `default`).
func checkHealth(args []string) int {
	addr, user := "127.0.0.1:6379", ""
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--user" && i+1 < len(args):
			user = args[i+1]
			i++
		case !strings.HasPrefix(args[i], "--") && addr == "127.0.0.1:6379":
			addr = args[i]
		default:
			fmt.Fprintln(os.Stderr, "Usage: hotkv-server --check-health [host:port] [--user name]  (password in REDISCLI_AUTH)")
			return 2
		}
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		// A bare port or a bare host.
		if strings.Trim(addr, "0123456789") == "" {
			addr = net.JoinHostPort("127.0.0.1", addr)
		} else {
			addr = net.JoinHostPort(addr, "6379")
		}
	}
	if err := ping(addr, user, os.Getenv("REDISCLI_AUTH")); err != nil {
		fmt.Fprintf(os.Stderr, "unhealthy: %s: %v\n", addr, err)
		return 1
	}
	return 0
}

// ping authenticates when a password is given, then expects +PONG to PING.
func ping(addr, user, pass string) error {
	nc, err := net.DialTimeout("tcp", addr, healthTimeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(healthTimeout))
	br := bufio.NewReader(nc)
	if pass != "" {
		auth := []string{"AUTH", pass}
		if user != "" {
			auth = []string{"AUTH", user, pass}
		}
		if reply, err := roundTrip(nc, br, auth...); err != nil {
			return err
		} else if reply != "+OK" {
			return errors.New("AUTH: " + reply)
		}
	}
	reply, err := roundTrip(nc, br, "PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return errors.New("PING: " + reply)
	}
	return nil
}

// roundTrip sends one command and reads a one-line reply (status or error), which is all
// AUTH and PING answer.
func roundTrip(w io.Writer, br *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return "", err
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
