package mcptest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
)

// GoServersDir is mcpclient/testdata/goservers: MCP servers built with the
// official go-sdk and with mcp-go, a module of its own (the SDKs stay out
// of odek's go.mod).
func GoServersDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "goservers")
}

var goBuilds sync.Map // program → *goBuild

type goBuild struct {
	once sync.Once
	path string
	err  error
}

// GoServer returns the path of the program ("gosdk-server" or
// "mcpgo-server") of GoServersDir, built once per process (and cached in
// the OS temp directory by the hash of the module's sources) with
// GOFLAGS=-mod=readonly and GOPROXY=off: the build never reaches the
// network, so the SDK versions go.sum pins must be in the module cache
// (`go mod download` in that directory). When they are not, the test is
// skipped unless ODEK_REQUIRE_GO_INTEROP is set (CI sets it), which makes
// it a failure.
func GoServer(t testing.TB, program string) string {
	t.Helper()
	v, _ := goBuilds.LoadOrStore(program, &goBuild{})
	b := v.(*goBuild)
	b.once.Do(func() { b.path, b.err = buildGoServer(program) })
	if b.err != nil {
		if os.Getenv("ODEK_REQUIRE_GO_INTEROP") == "" {
			t.Skipf("mcptest: %v (set ODEK_REQUIRE_GO_INTEROP=1 to make this a failure; run `go mod download` in mcpclient/testdata/goservers)", b.err)
		}
		t.Fatalf("mcptest: ODEK_REQUIRE_GO_INTEROP is set: %v", b.err)
	}
	return b.path
}

func buildGoServer(program string) (string, error) {
	dir := GoServersDir()
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", filepath.Join(program, "main.go")} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	cache := filepath.Join(os.TempDir(), "odek-mcptest")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(cache, program+"-"+hex.EncodeToString(h.Sum(nil)[:8]))
	if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
		return out, nil
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	cmd := exec.Command(goTool(), "build", "-o", tmp, "./"+program)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building %s with the pinned SDKs failed: %v: %s", program, err, strings.TrimSpace(string(b)))
	}
	return out, os.Rename(tmp, out)
}

// GoServerConfig is a stdio ServerConfig for a GoServer program.
func GoServerConfig(t testing.TB, name, program string, args ...string) mcpclient.ServerConfig {
	t.Helper()
	env, _ := mcpclient.FilterEnv(os.Environ(), nil, nil)
	return mcpclient.ServerConfig{
		Name:           name,
		Command:        GoServer(t, program),
		Args:           args,
		Env:            env,
		Timeout:        10 * time.Second,
		StartupTimeout: 20 * time.Second,
		Logger:         Logger(t),
	}
}

// GoHTTPServer runs gosdk-server behind the go-sdk's Streamable HTTP
// handler on a loopback port and returns its URL; it is killed when the
// test ends.
func GoHTTPServer(t testing.TB, args ...string) string {
	t.Helper()
	return serveURL(t, GoServer(t, "gosdk-server"), append([]string{"-http=127.0.0.1:0"}, args...))
}

// serveURL starts bin with args, reads the URL it prints as its first
// stdout line, and kills it when the test ends.
func serveURL(t testing.TB, bin string, args []string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mcptest: starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for {
			if _, err := out.Read(one); err != nil || one[0] == '\n' {
				line <- string(b)
				io.Copy(io.Discard, out)
				return
			}
			b = append(b, one[0])
		}
	}()
	select {
	case u := <-line:
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("mcptest: %s printed %q, not its URL", filepath.Base(bin), u)
		}
		return u
	case <-time.After(20 * time.Second):
		t.Fatalf("mcptest: %s printed no URL within 20s", filepath.Base(bin))
	}
	return ""
}
