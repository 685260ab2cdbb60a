package bench

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where a suite ran, for the report: ratios only mean something next to it.
type Machine struct {
	CPU      string  `json:"cpu"`
	Cores    int     `json:"cores"`
	MemoryGB float64 `json:"memory_gb"`
	Kernel   string  `json:"kernel"`
	Go       string  `json:"go"`
	Commit   string  `json:"commit"`
	HotKV    string  `json:"hotkv"`
	Redis    string  `json:"redis"`
}

// DescribeMachine reads the CPU model, core count, memory and kernel from /proc.
func DescribeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				for _, c := range f[1] {
					kb = kb*10 + float64(c-'0')
				}
			}
		}
		m.MemoryGB = kb / (1 << 20)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}
