// Package mcptest builds and starts odek's MCP fixture server
// (mcpclient/testdata/artifact_server.go) for tests of mcpclient and of
// the packages that use it (agent, CLI end-to-end tests), and locates the
// real MCP servers from npm that the interop tests run (NodeServer).
//
// The fixture is compiled once per test binary (and cached across runs in
// the OS temp directory, keyed by the source's hash), so tests pay for one
// `go build` at most. The helpers fail the test on error and register
// cleanups; they are safe for concurrent use by parallel tests.
package mcptest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/sirupsen/logrus"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// SourcePath returns the absolute path of the fixture's source.
func SourcePath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "artifact_server.go")
}

// FixturePath returns the path of the compiled fixture server, building it
// on first use. The test fails if it cannot be built.
func FixturePath(t testing.TB) string {
	t.Helper()
	p, err := BuildFixture()
	if err != nil {
		t.Fatalf("mcptest: building the fixture server: %v", err)
	}
	return p
}

// BuildFixture is FixturePath for programs that have no testing.TB (the
// SDK comparison in bench/mcpsdk): it returns the compiled fixture's path,
// building it once per process.
func BuildFixture() (string, error) {
	buildOnce.Do(func() { buildPath, buildErr = build() })
	return buildPath, buildErr
}

// goTool is the go command of the toolchain that runs the tests (GOROOT
// as `go test` sets it for the test binary), else the one on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if goBin := filepath.Join(root, "bin", "go"); fileExists(goBin) {
			return goBin
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func build() (string, error) {
	src := SourcePath()
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	dir := filepath.Join(os.TempDir(), "odek-mcptest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "artifact_server-"+hex.EncodeToString(sum[:8]))
	if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return out, nil
	}
	tmp, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	cmd := exec.Command(goTool(), "build", "-o", tmp.Name(), src)
	cmd.Dir = filepath.Dir(src)
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("%v: %s", err, b)
	}
	// Rename is atomic: concurrent test binaries never see half a file.
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}

// Config returns a ServerConfig for the fixture named name, run with args
// (fixture flags such as "-chaos", "-mode=garbage", "-root=DIR"), with a
// minimal environment, a 10s timeout and a logger writing to t.Log.
// Adjust the fields before starting.
func Config(t testing.TB, name string, args ...string) mcpclient.ServerConfig {
	t.Helper()
	env, _ := mcpclient.FilterEnv(os.Environ(), nil, nil)
	return mcpclient.ServerConfig{
		Name:           name,
		Command:        FixturePath(t),
		Args:           args,
		Env:            env,
		Timeout:        10 * time.Second,
		StartupTimeout: 20 * time.Second,
		Logger:         Logger(t),
	}
}

// Start starts cfg and closes the client when the test ends.
func Start(t testing.TB, cfg mcpclient.ServerConfig) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("mcptest: starting %q: %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("mcptest: closing %q: %v", cfg.Name, err)
		}
	})
	return c
}

// Logger returns a logger that writes to t.Log (at debug level), so server
// stderr and client warnings show up with the failing test.
func Logger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.DebugLevel)
	w := &testWriter{t: t}
	t.Cleanup(func() { w.done.Store(true) }) // runs after later cleanups (Close)
	l.Out = w
	l.Formatter = &logrus.TextFormatter{DisableTimestamp: true, DisableColors: true}
	return l
}

type testWriter struct {
	t    testing.TB
	done atomic.Bool
}

// Write logs p unless the test has finished (t.Log would panic then).
func (w *testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// NodeDir returns the absolute path of mcpclient/testdata/node, where the
// interop tests' npm packages are pinned (package.json, package-lock.json)
// and installed by `npm ci --prefix mcpclient/testdata/node`.
func NodeDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "node")
}

// NodeServer returns a ServerConfig that runs the npm package pkg (for
// example "@modelcontextprotocol/server-everything") from NodeDir by its
// installed entry point — `node <bin script> args...` — with a minimal
// environment, a 10s timeout and a test logger.
//
// The test is skipped when node is not on PATH and ODEK_REQUIRE_NODE is
// unset; with ODEK_REQUIRE_NODE set (CI) a missing node fails it. When
// node is there but pkg is not installed, or is installed at another
// version than package.json pins, NodeServer installs the pinned packages
// with `npm ci --prefix mcpclient/testdata/node` (once per process, under
// a lock file so parallel test binaries do not race), so a plain
// `go test ./...` works on a fresh machine with node and npm; if that is
// impossible (no npm, no registry) the test fails saying what to run.
func NodeServer(t testing.TB, name, pkg string, args ...string) mcpclient.ServerConfig {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("ODEK_REQUIRE_NODE") == "" {
			t.Skipf("mcptest: node is not installed (set ODEK_REQUIRE_NODE=1 to make this a failure): %v", err)
		}
		t.Fatalf("mcptest: ODEK_REQUIRE_NODE is set but node is not on PATH: %v", err)
	}
	entry, err := nodeEntry(NodeDir(), pkg)
	if err != nil {
		if ierr := installNodePackages(); ierr != nil {
			t.Fatalf("mcptest: %v, and installing the pinned packages failed: %v; run `npm ci --prefix mcpclient/testdata/node` from the repository root", err, ierr)
		}
		if entry, err = nodeEntry(NodeDir(), pkg); err != nil {
			t.Fatalf("mcptest: %v after `npm ci --prefix mcpclient/testdata/node`", err)
		}
	}
	env, _ := mcpclient.FilterEnv(os.Environ(), nil, nil)
	return mcpclient.ServerConfig{
		Name:           name,
		Command:        node,
		Args:           append([]string{entry}, args...),
		Env:            env,
		Timeout:        10 * time.Second,
		StartupTimeout: 30 * time.Second,
		Logger:         Logger(t),
	}
}

// installNodePackages runs `npm ci` in NodeDir once per process, holding
// an exclusive lock on a file there so that test binaries running in
// parallel install once and never see a half-written node_modules.
var installNodePackages = sync.OnceValue(func() error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm is not on PATH: %v", err)
	}
	dir := NodeDir()
	unlock, err := lockFile(filepath.Join(dir, ".install.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
})

// nodeEntry finds pkg's installed entry point under dir/node_modules: the
// script its package.json "bin" names (the only one, or the one named
// after the package), checking the installed version against the one
// dir/package.json pins.
func nodeEntry(dir, pkg string) (string, error) {
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(dir, "package.json"), &pinned); err != nil {
		return "", err
	}
	want, ok := pinned.Dependencies[pkg]
	if !ok {
		return "", fmt.Errorf("%s is not pinned in %s", pkg, filepath.Join(dir, "package.json"))
	}
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	var installed struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := readJSON(filepath.Join(pkgDir, "package.json"), &installed); err != nil {
		return "", fmt.Errorf("%s is not installed: %v", pkg, err)
	}
	if installed.Version != want {
		return "", fmt.Errorf("%s is installed at version %s, package.json pins %s", pkg, installed.Version, want)
	}
	var script string
	var bins map[string]string
	if err := json.Unmarshal(installed.Bin, &script); err != nil {
		if err := json.Unmarshal(installed.Bin, &bins); err != nil || len(bins) == 0 {
			return "", fmt.Errorf("%s: package.json has no usable \"bin\" entry", pkg)
		}
		base := pkg[strings.LastIndexByte(pkg, '/')+1:]
		for name, s := range bins {
			if len(bins) == 1 || strings.HasSuffix(name, base) {
				script = s
			}
		}
		if script == "" {
			return "", fmt.Errorf("%s: package.json names %d bin scripts, none after the package", pkg, len(bins))
		}
	}
	entry := filepath.Join(pkgDir, filepath.FromSlash(script))
	if _, err := os.Stat(entry); err != nil {
		return "", fmt.Errorf("%s: entry point: %v", pkg, err)
	}
	return entry, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// HTTPFixture runs the fixture as a Streamable HTTP server on a loopback
// port (fixture flag -http, plus args such as "-chaos", "-http-json") and
// returns its endpoint URL; the process is killed when the test ends.
func HTTPFixture(t testing.TB, args ...string) string {
	t.Helper()
	return serveURL(t, FixturePath(t), append([]string{"-http=127.0.0.1:0"}, args...))
}

// HTTPConfig returns a ServerConfig for the fixture at url (HTTPFixture)
// with a 10s timeout and a logger writing to t.Log.
func HTTPConfig(t testing.TB, name, url string) mcpclient.ServerConfig {
	return mcpclient.ServerConfig{
		Name:           name,
		URL:            url,
		Timeout:        10 * time.Second,
		StartupTimeout: 20 * time.Second,
		Logger:         Logger(t),
	}
}

// NodeScript returns node and the absolute path of rel inside the
// installed npm package pkg under NodeDir (a package the lock file pins,
// directly or as a dependency of one), installing the pinned packages
// first when they are missing. Skips or fails like NodeServer when node is
// not installed.
func NodeScript(t testing.TB, pkg, rel string) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("ODEK_REQUIRE_NODE") == "" {
			t.Skipf("mcptest: node is not installed (set ODEK_REQUIRE_NODE=1 to make this a failure): %v", err)
		}
		t.Fatalf("mcptest: ODEK_REQUIRE_NODE is set but node is not on PATH: %v", err)
	}
	script = filepath.Join(NodeDir(), "node_modules", filepath.FromSlash(pkg), filepath.FromSlash(rel))
	if _, err := os.Stat(script); err != nil {
		if ierr := installNodePackages(); ierr != nil {
			t.Fatalf("mcptest: %s: %v, and installing the pinned packages failed: %v", pkg, err, ierr)
		}
		if _, err := os.Stat(script); err != nil {
			t.Fatalf("mcptest: %v after `npm ci --prefix mcpclient/testdata/node`", err)
		}
	}
	return node, script
}
