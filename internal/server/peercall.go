package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// peerCall runs commands on another node's client port, as a member: it authenticates as a
// Redis replica does to its master (masteruser and masterauth, masterauth defaulting to this
// node's requirepass, because the members of a cluster normally share their passwords), then
// sends each command and reads its one-line reply. The first error reply ends the call and is
// returned as an error with its text. RAFT ANNOUNCE (cluster.go) and the slot map's admin
// commands forwarded to the meta leader (sharding.go) use it; a closing server aborts it.
func (s *Server) peerCall(addr string, timeout time.Duration, cmds ...[]string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, min(timeout, 2*time.Second))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-s.ctx.Done():
			_ = conn.Close() // the server closes: do not hold it up
		case <-finished:
		}
	}()
	rd := bufio.NewReader(conn)
	call := func(args []string) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write([]byte(b.String())); err != nil {
			return "", err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "-") {
			return "", errors.New(line[1:])
		}
		return line, nil
	}
	user, pass := s.cfg.Get("masteruser"), s.cfg.Get("masterauth")
	if pass == "" {
		pass = s.cfg.Get("requirepass")
	}
	switch {
	case user != "":
		_, err = call([]string{"AUTH", user, pass})
	case pass != "":
		_, err = call([]string{"AUTH", pass})
	}
	if err != nil {
		return "", fmt.Errorf("AUTH: %w", err)
	}
	var last string
	for _, c := range cmds {
		if last, err = call(c); err != nil {
			return "", err
		}
	}
	return last, nil
}
