package sandboxtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SurvivorScript is a shell script that leaves four processes behind,
// each `sleep marker` (marker a number no other process's command line
// holds): a background job, a nohup one, a setsid one and a
// double-forked one; it prints "started".
func SurvivorScript(marker string) string {
	return fmt.Sprintf(`sleep %[1]s >/dev/null 2>&1 &
nohup sleep %[1]s >/dev/null 2>&1 &
setsid sleep %[1]s >/dev/null 2>&1 &
( sleep %[1]s >/dev/null 2>&1 & )
echo started`, marker)
}

// FastOpenPing is a shell command that sends a Redis PING to
// 127.0.0.1:port with TCP Fast Open (sendto with MSG_FASTOPEN, no
// connect(2)) and prints the answer.
func FastOpenPing(port string) string {
	return `/usr/bin/python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.sendto(b"PING\r\n", socket.MSG_FASTOPEN, ("127.0.0.1", ` + port + `))
print("answer:", s.recv(64))'`
}

// Alive returns the pids of the live (not zombie) processes whose command
// line holds marker.
func Alive(t testing.TB, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		// The state follows the command name, which ends at the last ')'.
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// WaitGone polls until no live process holds marker or within passes,
// and returns the pids still alive.
func WaitGone(t testing.TB, marker string, within time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := Alive(t, marker)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}
