//go:build unix

package queuetest

import "syscall"

// Pause stops the server with SIGSTOP (it keeps its connections but
// answers nothing, as a stalled or partitioned node does) until Resume.
// Resume is registered as a cleanup, so a test that fails in between
// still lets Kill reap it.
func (s *Server) Pause() {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatalf("queuetest: pause %s: not running", s.Addr)
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("queuetest: pause %s: %v", s.Addr, err)
	}
	s.t.Cleanup(s.Resume)
}

// Resume continues a paused server (SIGCONT); a no-op for one not paused.
func (s *Server) Resume() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}
