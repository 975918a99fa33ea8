// Package queuetest holds test helpers for the queue package: a real
// redis-server on an ephemeral port, real topologies (StartTopology: one
// node, 1 master + 1 replica + 3 sentinels, a 3+3 cluster; EachTopology
// runs a test on each), and the conformance suite Run that every
// queue.Queue implementation must pass.
//
// Helpers are safe to call from parallel tests; each StartRedis gets its own
// server process, port and data directory, all removed by t.Cleanup. Only
// processes a helper started are ever killed (by their *exec.Cmd).
package queuetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv names the environment variable that turns a missing
// redis-server from a skip into a failure (CI sets it).
const RequireEnv = "ODEK_REQUIRE_REDIS"

// ServerOptions configure StartServer. The zero value is a throwaway server
// without persistence.
type ServerOptions struct {
	// AOF turns on the append-only file (appendfsync always), so Restart
	// keeps every acknowledged write.
	AOF bool
	// Args are more command-line options ("--replicaof", "127.0.0.1",
	// "6379"); each may use {port}, {port2} (a second free port, for a
	// cluster bus) and {dir}.
	Args []string
	// Sentinel runs the server as a sentinel: Config (with the same
	// placeholders) is written to sentinel.conf in the data directory,
	// which the sentinel rewrites as it learns the topology.
	Sentinel bool
	Config   string
	// TLS, when set, is how the helper's own probe reaches the server: for
	// a server that listens with TLS only (Args "--port", "0",
	// "--tls-port", "{port}", ...).
	TLS *tls.Config
}

// Server is a redis-server child process owned by one test.
type Server struct {
	Addr string
	Dir  string

	t     testing.TB
	bin   string
	opts  ServerOptions
	port  int
	port2 int
	cmd   *exec.Cmd
	exit  chan struct{}
}

// StartRedis starts a throwaway redis-server and returns a client for it.
// Both are closed when the test ends.
func StartRedis(t testing.TB) *redis.Client {
	t.Helper()
	return StartServer(t, ServerOptions{}).Client()
}

// StartServer starts redis-server on a free loopback port with its data in
// t.TempDir. It skips the test when redis-server is not installed, unless
// ODEK_REQUIRE_REDIS is set, in which case it fails.
func StartServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if mustFail(os.Getenv(RequireEnv)) {
			t.Fatalf("queuetest: redis-server not found and %s is set: %v", RequireEnv, err)
		}
		t.Skipf("queuetest: redis-server not installed (set %s to fail instead)", RequireEnv)
	}
	s := &Server{t: t, bin: bin, opts: opts, Dir: t.TempDir()}
	var lastErr error
	for try := 0; try < 5; try++ {
		port, err := freePort()
		port2, err2 := freePort()
		if err != nil || err2 != nil {
			t.Fatalf("queuetest: pick a port: %v", errors.Join(err, err2))
		}
		s.port, s.port2 = port, port2
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("queuetest: redis-server did not start: %v", lastErr)
	return nil
}

// mustFail decides, for a missing redis-server, between failing (the
// RequireEnv variable is set to anything but "" or "0") and skipping.
func mustFail(requireEnv string) bool { return requireEnv != "" && requireEnv != "0" }

// freePort asks the kernel for a free port. Another process may take it
// before redis-server binds it; StartServer retries then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) expand(a string) string {
	return strings.NewReplacer("{port}", strconv.Itoa(s.port), "{port2}", strconv.Itoa(s.port2), "{dir}", s.Dir).Replace(a)
}

func (s *Server) start() error {
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	var args []string
	if s.opts.Sentinel {
		conf := filepath.Join(s.Dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(s.expand(s.opts.Config)), 0o600); err != nil {
			return err
		}
		args = append(args, conf, "--sentinel")
	}
	args = append(args, []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "yes",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
	}...)
	if s.opts.AOF {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else if !s.opts.Sentinel {
		args = append(args, "--appendonly", "no")
	}
	for _, a := range s.opts.Args {
		args = append(args, s.expand(a))
	}
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	s.cmd, s.exit = cmd, exit

	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, TLSConfig: s.opts.TLS})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exit:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr, tail(log, 400))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			// The port may have been taken between freePort and the bind
			// by another test's server: answer only for ours.
			if !strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)+"\r\n") {
				s.Kill()
				return fmt.Errorf("redis-server on %s: another server answers on that port", s.Addr)
			}
			return nil
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on %s not answering PING: %w", s.Addr, err)
		}
		select {
		case <-exit:
		case <-time.After(10 * time.Millisecond): // poll interval, not synchronisation
		}
	}
}

// Client returns a new client for the server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill stops the server with SIGKILL and waits for it to exit. Safe to call
// more than once.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.cmd = nil
}

// Restart kills the server and starts it again on the same port and data
// directory (with AOF, acknowledged writes survive).
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatalf("queuetest: restart redis-server: %v", err)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
