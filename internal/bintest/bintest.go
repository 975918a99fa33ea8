// Package bintest builds odek's commands for tests that run them as real
// processes, and collects those processes' output (Buffer), (end-to-end tests of cmd/odek and cmd/odek-bot, sub-agent tests
// whose children are real `odek subagent` processes).
//
// Concurrency and ownership: a Set is safe for concurrent use; it builds
// each package at most once into its own temporary directory, which Remove
// deletes. The caller (usually TestMain) owns the Set.
package bintest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
)

// Set is a lazily built collection of binaries in one temporary directory.
type Set struct {
	mu    sync.Mutex
	dir   string
	built map[string]string // import path → binary
}

// Build compiles the main package at importPath (for example
// "github.com/odekrun/odek/cmd/odek") once and returns the binary's path,
// named after the last path element. Build output is in the error.
func (s *Set) Build(importPath string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bin, ok := s.built[importPath]; ok {
		return bin, nil
	}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "odek-bintest-")
		if err != nil {
			return "", err
		}
		s.dir = dir
		s.built = map[string]string{}
	}
	bin := filepath.Join(s.dir, path.Base(importPath))
	out, err := exec.Command("go", "build", "-o", bin, importPath).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bintest: go build %s: %v\n%s", importPath, err, out)
	}
	s.built[importPath] = bin
	return bin, nil
}

// MustBuild is Build for TestMain, where there is no testing.T: it panics
// on failure.
func (s *Set) MustBuild(importPath string) string {
	bin, err := s.Build(importPath)
	if err != nil {
		panic(err)
	}
	return bin
}

// Remove deletes every binary built.
func (s *Set) Remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir, s.built = "", nil
	}
}

// Buffer collects a process's output; unlike bytes.Buffer it may be read
// while the process is still writing to it. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
