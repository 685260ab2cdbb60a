// Package freeport picks loopback ports for the servers that tests and benchmarks start.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)

// lowest is the first port Get considers: below it live the well-known services a developer's
// machine may run (Redis's 6379, 8080...).
const lowest = 20000

// Get returns a loopback port that is free right now, never the same port twice in one
// process, and never one of the kernel's ephemeral ports. A harness that picks a group's Raft
// ports first and its meta ports later got one of the Raft ports again (free until its node
// started), and two nodes then wanted the same port. A port the kernel offered for
// 127.0.0.1:0 was no better: it comes from the ephemeral range, from which the kernel also
// takes the local port of every outgoing connection, so a node's Raft port, picked before the
// node started, was sometimes the local end of another node's connection by then (the sharded
// chaos test failed to start 1 run in 15 that way on a loaded machine). Get draws from the
// ports between lowest and the start of the ephemeral range, which only an explicit bind
// takes. Another process may still bind the port before the server does: callers retry a
// start that fails on it.
func Get() (int, error) {
	if lo, hi := lowest, ephemeralStart(); hi-lo >= 1000 {
		for range 1000 {
			port := lo + rand.IntN(hi-lo)
			if take(port) {
				return port, nil
			}
		}
	}
	// No room below the ephemeral range (or no free port in it): ask the kernel.
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if mark(port) {
			return port, nil
		}
	}
	return 0, errors.New("freeport: every port the kernel offered was handed out already")
}

// take marks port handed out if it was not, and binds it once to check that it is free.
func take(port int) bool {
	if !mark(port) {
		return false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false // in use: it stays marked, so it is not tried again
	}
	ln.Close()
	return true
}

// mark records port as handed out and reports whether it was not already.
func mark(port int) bool {
	mu.Lock()
	defer mu.Unlock()
	if handedOut[port] {
		return false
	}
	handedOut[port] = true
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range: Linux's
// ip_local_port_range, else IANA's 49152, the default of the BSDs and macOS.
func ephemeralStart() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 49152
}
