//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary, run confined, do one thing and exit.
const childEnv = "ODEK_SANDBOX_TEST_CHILD"

func TestMain(m *testing.M) {
	Main()
	if action := os.Getenv(childEnv); action != "" {
		os.Exit(child(action))
	}
	os.Exit(m.Run())
}

// child performs action inside the sandbox: "tcp:ADDR" and "mptcp:ADDR"
// connect, printing "connected" or the error.
func child(action string) int {
	kind, addr, _ := strings.Cut(action, ":")
	switch kind {
	case "tcp":
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		c.Close()
		fmt.Println("connected")
		return 0
	case "owner":
		// An odek process with a job that leaves a survivor, killed
		// before it can end the job (TestKillJobsOfEndsAnOrphansJobs):
		// addr is the spec's JSON, then a tab and the survivor's marker.
		specJSON, marker, _ := strings.Cut(addr, "\t")
		var spec Spec
		if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		jl, err := NewJail(spec)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		cmd := exec.Command("sh", "-c", "sleep "+marker+" >/dev/null 2>&1 &")
		cmd.Dir, cmd.Env = spec.Root, Env(spec, os.Environ())
		if err := jl.Start(cmd); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		cmd.Wait()
		fmt.Println("ready")
		select {}
	case "fds":
		// The descriptors this process inherited, beyond stdio, with
		// their kind (TestSupervisorSocketStaysItsOwn).
		for fd := 3; fd < 1024; fd++ {
			var st syscall.Stat_t
			if syscall.Fstat(fd, &st) == nil {
				fmt.Printf("fd %d mode %o\n", fd, st.Mode&syscall.S_IFMT)
			}
		}
		fmt.Println("listed")
		return 0
	case "shloop":
		return shLoop(addr)
	case "mptcp":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, ipprotoMPTCP)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		syscall.Close(fd)
		fmt.Println("created")
		return 0
	}
	return 2
}

// requireLandlock skips without the ABI the sandbox needs, unless
// ODEK_REQUIRE_LANDLOCK is set (CI), where it fails.
func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := ABI(); abi < RequiredABI {
		if os.Getenv("ODEK_REQUIRE_LANDLOCK") != "" {
			t.Fatalf("Landlock ABI %d, need %d (ODEK_REQUIRE_LANDLOCK is set)", abi, RequiredABI)
		}
		t.Skipf("Landlock ABI %d, need %d", abi, RequiredABI)
	}
}

type jail struct {
	spec  Spec
	other string   // a directory outside the jail holding secret.txt
	how   startHow // how each command starts
}

// startHow is a way a confined command starts.
type startHow int

const (
	viaHelper     startHow = iota // Command: the helper, no Jail
	viaJail                       // Jail.Start: the helper, per command
	viaSupervisor                 // Jail.Run: the job's supervisor
)

func (h startHow) String() string {
	return [...]string{"helper", "thread", "supervisor"}[h]
}

// starts are the ways every route is tried.
var starts = []startHow{viaHelper, viaJail, viaSupervisor}

func newJail(t *testing.T, s Settings) *jail {
	t.Helper()
	base := t.TempDir()
	root, tmp, other := filepath.Join(base, "root"), filepath.Join(base, "tmp"), filepath.Join(base, "other")
	for _, d := range []string{root, tmp, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("chat A's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mine.txt"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	s.ReadOnlyPaths = append(s.ReadOnlyPaths, filepath.Dir(exe)) // the test binary runs confined as a child
	spec, err := NewSpec(s, Paths{Root: root, TempDir: tmp, Deny: []string{other}}, Host)
	if err != nil {
		t.Fatal(err)
	}
	return &jail{spec: spec, other: other}
}

// run runs argv confined and returns its combined output and exit code.
func (j *jail) run(t *testing.T, env []string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	var jl *Jail
	if j.how != viaHelper {
		var err error
		if jl, err = NewJail(j.spec); err != nil {
			t.Fatal(err)
		}
		defer jl.Close()
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	} else {
		var err error
		if cmd, err = Command(ctx, j.spec, argv...); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Dir = j.spec.Root
	cmd.Env = append(Env(j.spec, os.Environ()), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	if j.how == viaSupervisor {
		requireCgroups(t)
		var ws syscall.WaitStatus
		ws, err = jl.Run(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if jl.sup == nil {
			t.Fatalf("Run did not use a supervisor: %v", jl.noSup)
		}
		if ws.Signaled() {
			return out.String(), 128 + int(ws.Signal())
		}
		return out.String(), ws.ExitStatus()
	} else if jl != nil {
		if err = jl.Start(cmd); err == nil {
			err = cmd.Wait()
		}
	} else {
		err = cmd.Run()
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func TestConfinedFiles(t *testing.T) {
	requireLandlock(t)
	for _, how := range starts {
		t.Run(how.String(), func(t *testing.T) {
			j := newJail(t, Settings{})
			j.how = how
			testConfinedFiles(t, j)
		})
	}
	// odek itself stays unconfined after starting confined commands.
	if _, err := os.ReadDir("/proc/self"); err != nil {
		t.Fatalf("odek lost access to /proc after confined starts: %v", err)
	}
}

func testConfinedFiles(t *testing.T, j *jail) {
	tests := []struct {
		name, script string
		ok           bool
	}{
		{"read own file", "cat mine.txt", true},
		{"write own dir", "echo hi > new.txt && mkdir -p a/b && mv new.txt a/b/ && cat a/b/new.txt", true},
		{"temp dir", `echo t > "$TMPDIR/t" && cat "$HOME/t"`, true},
		{"system binaries", "ls /usr/bin >/dev/null && wc -l /etc/passwd", true},
		{"read other chat", "cat " + j.other + "/secret.txt", false},
		{"copy other chat", "cp " + j.other + "/secret.txt stolen.txt", false},
		{"hard link other chat", "ln " + j.other + "/secret.txt linked.txt", false},
		{"symlink then read", "ln -s " + j.other + "/secret.txt link.txt && cat link.txt", false},
		{"list other chat", "ls " + j.other, false},
		{"find from /", "find / -name secret.txt 2>/dev/null | grep -q secret", false},
		{"proc of the parent", fmt.Sprintf("cat /proc/%d/environ", os.Getpid()), false},
		{"proc listing", "ls /proc", false},
		{"tmp outside", "ls /tmp", false},
		{"shadow", "cat /etc/shadow", false},
		{"write system", "touch /usr/odek-test", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := j.run(t, nil, "sh", "-c", tt.script)
			if (code == 0) != tt.ok {
				t.Errorf("%q: exit %d, want ok=%v\n%s", tt.script, code, tt.ok, out)
			}
			if strings.Contains(out, "chat A's secret") {
				t.Errorf("%q read the other chat's file:\n%s", tt.script, out)
			}
		})
	}
}

func TestConfinedNetwork(t *testing.T) {
	requireLandlock(t)
	ln := listen(t)
	addr := ln.Addr().String()
	_, portS, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portS)
	for _, how := range starts {
		t.Run(how.String(), func(t *testing.T) {
			testConfinedNetwork(t, addr, port, how)
		})
	}
}

func testConfinedNetwork(t *testing.T, addr string, port int, how startHow) {
	exe, _ := os.Executable()
	closed := newJail(t, Settings{})
	closed.how = how
	if out, code := closed.run(t, []string{childEnv + "=tcp:" + addr}, exe); code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("TCP connect to %s with no port allowed: exit %d\n%s", addr, code, out)
	}
	if out, code := closed.run(t, []string{childEnv + "=mptcp:" + addr}, exe); code == 0 || !strings.Contains(out, "protocol not supported") {
		t.Errorf("MPTCP socket: exit %d\n%s", code, out)
	}
	open := newJail(t, Settings{AllowConnectPorts: []int{port}})
	open.how = how
	if out, code := open.run(t, []string{childEnv + "=tcp:" + addr}, exe); code != 0 || !strings.Contains(out, "connected") {
		t.Errorf("TCP connect to an allowed port: exit %d\n%s", code, out)
	}
}

func TestConfinedSignalsAndLimits(t *testing.T) {
	requireLandlock(t)
	j := newJail(t, Settings{MaxMemoryMB: 300, MaxProcesses: 4096})
	if ABI() >= 6 {
		if out, code := j.run(t, nil, "sh", "-c", fmt.Sprintf("kill -0 %d", os.Getpid())); code == 0 {
			t.Errorf("a confined shell may signal its parent (scoping, ABI 6):\n%s", out)
		}
	}
	out, code := j.run(t, nil, "sh", "-c", "ulimit -v; ulimit -p")
	if code != 0 || !strings.Contains(out, strconv.Itoa(300*1024)) || !strings.Contains(out, "4096") {
		t.Errorf("limits: exit %d\n%s", code, out)
	}
}

// A read-only grant whose path was removed after the spec was made (an
// entry of /tmp listed when the spec split it around a denied path, then
// deleted by whoever made it) is skipped: the command still runs,
// confined, on every way a command starts. Failing here made the
// command's whole job fail for a file nobody asked for.
func TestVanishedReadOnlyPathIsSkipped(t *testing.T) {
	requireLandlock(t)
	for _, how := range starts {
		j := newJail(t, Settings{})
		j.how = how
		gone := filepath.Join(t.TempDir(), "gone")
		for _, p := range []string{gone + "-dir", gone + "-file"} {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		j.spec.ReadOnly = append(j.spec.ReadOnly, gone+"-dir")
		j.spec.ReadOnlyFiles = append(j.spec.ReadOnlyFiles, gone+"-file")
		os.Remove(gone + "-dir")
		os.Remove(gone + "-file")
		out, code := j.run(t, nil, "sh", "-c", "cat mine.txt; cat "+filepath.Join(j.other, "secret.txt"))
		if code == 0 || !strings.Contains(out, "mine") || strings.Contains(out, "chat A's secret") {
			t.Errorf("%v: exit %d, want the own file read and the other chat's refused:\n%s", how, code, out)
		}
	}
}

func TestHelperUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := runHelper([]string{"{}"}, &stderr); code != ExitUsage {
		t.Errorf("no command: exit %d", code)
	}
	if code := runHelper([]string{"{", "sh"}, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "bad spec") {
		t.Errorf("bad spec: exit %d %s", code, stderr.String())
	}
	// A spec without root never runs the command.
	stderr.Reset()
	if code := runHelper([]string{`{"temp_dir":"/tmp"}`, "true"}, &stderr); code != ExitNotConfined {
		t.Errorf("spec without root: exit %d %s", code, stderr.String())
	}
}

func TestVerify(t *testing.T) {
	requireLandlock(t)
	if err := Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Many commands started at once through one jail: each is confined, and
// none of it leaks into odek (its goroutines keep every access).
func TestJailLeavesOdekUnconfined(t *testing.T) {
	requireLandlock(t)
	j := newJail(t, Settings{})
	jl, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	ln := listen(t)
	errs := make(chan error, 32)
	for range 32 {
		go func() {
			cmd := exec.Command("sh", "-c", "cat "+j.other+"/secret.txt")
			cmd.Dir, cmd.Env = j.spec.Root, Env(j.spec, os.Environ())
			if err := jl.Start(cmd); err != nil {
				errs <- err
				return
			}
			if err := cmd.Wait(); err == nil {
				errs <- fmt.Errorf("a confined cat read the secret")
				return
			}
			// This goroutine may now run on any thread: it is not confined.
			if _, err := os.ReadFile(filepath.Join(j.other, "secret.txt")); err != nil {
				errs <- fmt.Errorf("odek lost access after a start: %v", err)
				return
			}
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				errs <- fmt.Errorf("odek lost the network after a start: %v", err)
				return
			}
			c.Close()
			errs <- nil
		}()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if err := jl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := jl.Start(exec.Command("true")); !errors.Is(err, ErrJailClosed) {
		t.Errorf("Start after Close = %v", err)
	}
}

// listen returns a loopback TCP listener that accepts and closes every
// connection until the test ends.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}
