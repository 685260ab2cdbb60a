// Package freeport picks loopback ports for the servers that tests and benchmarks start.
package freeport

import (
	"errors"
	"net"
	"sync"
)

var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)

// Get asks the kernel for a loopback port that is free right now, and never returns the same
// port twice in one process. A harness that picks a group's Raft ports first and its meta
// ports later got one of the Raft ports again (free until its node started), and two nodes
// then wanted the same port. Another process may still take the port before the server binds
// it: callers retry a start that fails on it.
func Get() (int, error) {
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		mu.Lock()
		seen := handedOut[port]
		handedOut[port] = true
		mu.Unlock()
		if !seen {
			return port, nil
		}
	}
	return 0, errors.New("freeport: every port the kernel offered was handed out already")
}
