//go:build !unix

package queuetest

// Pause skips the test: stopping a process with a signal is Unix-only.
func (s *Server) Pause() {
	s.t.Helper()
	s.t.Skip("queuetest: Pause needs SIGSTOP (Unix only)")
}

// Resume does nothing off Unix.
func (s *Server) Resume() {}
