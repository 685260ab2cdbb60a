package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP reloads the Envoy rate limit service's configuration; a bad file is logged and the
// old configuration kept; a server without the service ignores SIGHUP, as Redis does.
func TestSIGHUPReloadsRLSConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "ratelimit.yaml")
	write := func(s string) {
		if err := os.WriteFile(conf, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("domain: first\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	p := startServer(t, dir, "--rls-port", strconv.Itoa(freePort(t)), "--rls-config", conf)
	c := client(p)
	defer c.Close()
	domains := func() string {
		v, err := c.Do(context.Background(), "RLS", "STATUS").Result()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	waitFor := func(what string, f func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !f() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, p.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !strings.Contains(domains(), "domains first") {
		t.Fatalf("RLS STATUS %s", domains())
	}
	write("domain: second\ndescriptors: []\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the reload", func() bool { return strings.Contains(domains(), "domains second") })
	write("domain: third\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the refusal in the log", func() bool {
		return strings.Contains(p.out.String(), "SIGHUP: the rate limit configuration was not reloaded") &&
			strings.Contains(p.out.String(), conf+":4: invalid rate limit unit 'fortnight'")
	})
	if !strings.Contains(domains(), "domains second") {
		t.Fatalf("the old configuration was not kept: %s", domains())
	}

	plain := startServer(t, "")
	if err := plain.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if code := plain.wait(0); code != -1 {
		t.Fatalf("a server without the service exited on SIGHUP: %d", code)
	}
	if !plain.waitReady(t, 5*time.Second) {
		t.Fatal("the server stopped answering after SIGHUP")
	}
}
