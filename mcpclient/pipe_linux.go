package mcpclient

import (
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// newStdoutPipe makes the pipe for the server's stdout. On Linux our read
// end is a blockingReader: the reader goroutine reads it with a plain
// blocking read(2) on its own thread, instead of parking in the runtime's
// netpoller (read → EAGAIN → epoll → reschedule → read again). A response
// then costs one syscall and reaches the caller one scheduler hand-off
// sooner, which is a large part of a round trip here (BenchmarkEcho*,
// bench/mcpsdk). Close still interrupts a blocked Read, like an *os.File.
// Both ends are blocking, as a child expects of its stdout.
func newStdoutPipe() (io.ReadCloser, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	// Close can only wake a blocked read through /proc; without it (not
	// mounted, or hidden), use an ordinary netpoller pipe.
	w, err := openWakeEnd(p[0])
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return os.Pipe()
	}
	unix.Close(w)
	// A blocking descriptor is not put in the netpoller; its Close does
	// not wait for a Read in progress and the descriptor is released when
	// that Read returns.
	return &blockingReader{f: os.NewFile(uintptr(p[0]), "|0"), fd: p[0]}, os.NewFile(uintptr(p[1]), "|1"), nil
}

// openWakeEnd opens a new, non-blocking write end of the pipe whose read
// end is fd.
func openWakeEnd(fd int) (int, error) {
	return unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}

// blockingReader reads a blocking pipe. One goroutine reads at a time (the
// connection's reader); Close may come from any goroutine. To wake a Read
// blocked on a pipe whose write end someone still holds (a grandchild that
// left the process group), Close opens a second, non-blocking write end
// through /proc/self/fd and writes one newline; the woken Read sees the
// closed flag and returns os.ErrClosed, dropping what it read.
// (newStdoutPipe checked that /proc allows this.)
type blockingReader struct {
	f      *os.File
	fd     int // f's descriptor, valid until f.Close
	closed atomic.Bool
	once   sync.Once
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if r.closed.Load() {
		return 0, os.ErrClosed
	}
	n, err := r.f.Read(p)
	if r.closed.Load() {
		return 0, os.ErrClosed
	}
	return n, err
}

// Close interrupts a blocked Read; later Reads return os.ErrClosed.
func (r *blockingReader) Close() error {
	r.once.Do(func() {
		r.closed.Store(true)
		// r.fd is still open: only this function closes it.
		if w, err := openWakeEnd(r.fd); err == nil {
			// EAGAIN (a full pipe) is fine: then no Read is blocked.
			unix.Write(w, []byte{'\n'})
			unix.Close(w)
		}
		r.f.Close()
	})
	return nil
}
