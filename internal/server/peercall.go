package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// peerConn is a connection to another node's client port as a member of the cluster: it
// authenticates as a Redis replica does to its master (masteruser and masterauth, masterauth
// defaulting to this node's requirepass, because the members of a cluster normally share
// their passwords). RAFT ANNOUNCE (cluster.go), the slot map's admin commands forwarded to the
// meta leader (sharding.go) and slot moves (migrate.go) use it. Replies are read as one line:
// every command sent this way answers a status, an error or an integer.
type peerConn struct {
	conn     net.Conn
	rd       *bufio.Reader
	w        *bufio.Writer
	finished chan struct{}
	// end is the whole conversation's deadline (dialPeer's timeout). stall, when set, also
	// bounds each reply and each flush: a long conversation (a slot move's copy) that stops
	// making progress fails then, and its caller retries, instead of waiting out end.
	end   time.Time
	stall time.Duration
	// broken is the I/O error that ended the conversation: every later reply returns it at
	// once. Without it a caller draining a pipeline after a stall waited stall again for each
	// reply still counted in flight (thousands of them in a copy).
	broken error
}

// dialPeer connects to addr and authenticates; timeout bounds the dial and, as a deadline,
// the whole conversation. A closing server closes the connection.
func (s *Server) dialPeer(addr string, timeout time.Duration) (*peerConn, error) {
	conn, err := net.DialTimeout("tcp", addr, min(timeout, 2*time.Second))
	if err != nil {
		return nil, err
	}
	end := time.Now().Add(timeout)
	_ = conn.SetDeadline(end)
	p := &peerConn{conn: conn, rd: bufio.NewReader(conn), w: bufio.NewWriterSize(conn, 64<<10), finished: make(chan struct{}), end: end}
	go func() {
		select {
		case <-s.ctx.Done():
			_ = conn.Close() // the server closes: do not hold it up
		case <-p.finished:
		}
	}()
	user, pass := s.cfg.Get("masteruser"), s.cfg.Get("masterauth")
	if pass == "" {
		pass = s.cfg.Get("requirepass")
	}
	switch {
	case user != "":
		_, err = p.call("AUTH", user, pass)
	case pass != "":
		_, err = p.call("AUTH", pass)
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("AUTH: %w", err)
	}
	return p, nil
}

func (p *peerConn) close() {
	close(p.finished)
	_ = p.conn.Close()
}

// send buffers one command.
func (p *peerConn) send(args ...string) {
	p.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		p.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		p.w.WriteString(a)
		p.w.WriteString("\r\n")
	}
}

// sendArgs is send for arguments already held as bytes (a relayed client command).
func (p *peerConn) sendArgs(args [][]byte) {
	p.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		p.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		p.w.Write(a)
		p.w.WriteString("\r\n")
	}
}

// reply flushes what was sent and reads one reply line; an error reply is returned as an
// error with its text.
func (p *peerConn) reply() (string, error) {
	if p.broken != nil {
		return "", p.broken
	}
	if p.stall > 0 {
		d := time.Now().Add(p.stall)
		if p.end.Before(d) {
			d = p.end
		}
		_ = p.conn.SetDeadline(d)
	}
	if p.w.Buffered() > 0 {
		if err := p.w.Flush(); err != nil {
			p.broken = err
			return "", err
		}
	}
	line, err := p.rd.ReadString('\n')
	if err != nil {
		p.broken = err
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return "", errors.New(line[1:])
	}
	return line, nil
}

// bulkReply reads the body of a bulk string reply whose first line was line.
func (p *peerConn) bulkReply(line string) ([]byte, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		return nil, fmt.Errorf("expected a bulk string, got %q", line)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(p.rd, b); err != nil {
		return nil, err
	}
	return b[:n], nil
}

func (p *peerConn) call(args ...string) (string, error) {
	p.send(args...)
	return p.reply()
}

// peerCall runs commands on the node at addr; the first error reply ends the call.
func (s *Server) peerCall(addr string, timeout time.Duration, cmds ...[]string) (string, error) {
	p, err := s.dialPeer(addr, timeout)
	if err != nil {
		return "", err
	}
	defer p.close()
	var last string
	for _, c := range cmds {
		if last, err = p.call(c...); err != nil {
			return "", err
		}
	}
	return last, nil
}
