package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hotkv/hotkv/internal/bench"
)

// TestMergeSection: merging one section into the repository's own report keeps every other
// section and regenerates the same benchmarks.md (the report is a function of results.json).
func TestMergeSection(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"benchmarks.md", "benchmarks/results.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orig, err := readResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if orig.Raft == nil || orig.Cluster == nil || orig.RLS == nil || len(orig.Cases) == 0 {
		t.Fatal("docs/benchmarks/results.json lacks a section this test merges around")
	}
	// Setting a section to what it was changes nothing.
	if err := mergeSection(out, true, func(r *bench.Results) { r.Raft = orig.Raft }); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	got, _ := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if string(got) != string(want) {
		t.Fatal("benchmarks.md differs after merging the section it already had")
	}
	// Dropping the RLS section keeps the others.
	if err := mergeSection(out, true, func(r *bench.Results) { r.RLS = nil }); err != nil {
		t.Fatal(err)
	}
	now, err := readResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if now.RLS != nil || now.Raft == nil || now.Cluster == nil || len(now.Cases) != len(orig.Cases) {
		t.Fatalf("after dropping RLS: raft %v cluster %v cases %d (was %d)", now.Raft != nil, now.Cluster != nil, len(now.Cases), len(orig.Cases))
	}
	// The RLS section needs the suite's report; the others start one.
	empty := t.TempDir()
	if err := mergeSection(empty, true, func(*bench.Results) {}); err == nil {
		t.Fatal("merging the RLS section into no report succeeded")
	}
	if err := mergeSection(empty, false, func(r *bench.Results) { r.Cluster = orig.Cluster }); err != nil {
		t.Fatal(err)
	}
}
