package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestChildDiesWithParent: a process started the way launch starts servers is killed by the
// kernel when the process that started it is SIGKILLed. The parent is this test binary run
// again as a helper, which starts `sleep` and prints its pid.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("HOTKV_BENCH_PARENT") == "1" {
		cmd := exec.Command("sleep", "60")
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	parent := exec.Command(os.Args[0], "-test.run", "^TestChildDiesWithParent$")
	parent.Env = append(os.Environ(), "HOTKV_BENCH_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("helper: %q %v", line, err)
	}
	child, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("child %d not running: %v", child, err)
	}
	parent.Process.Kill()
	parent.Wait()
	// The child is not ours to reap: it is gone once it no longer exists or is a zombie
	// waiting for init.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil || len(st) > 0 && zombie(st) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d still running 5 s after its parent was killed", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombie reads the state field of a /proc/<pid>/stat line.
func zombie(stat []byte) bool {
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == 'Z'
		}
	}
	return false
}
