package mcpclient

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// newStdoutPipe makes the pipe for the server's stdout. On Linux our read
// end is a pollReader: the reader goroutine waits for data in a blocking
// poll(2) on its own thread and reads as soon as poll returns, instead of
// parking in the runtime's netpoller and being rescheduled by it. A
// response then reaches the caller one scheduler hand-off sooner, which
// is most of a round trip's latency here (BenchmarkEchoSequential,
// bench/mcpsdk). Close still interrupts a blocked Read, like an *os.File.
func newStdoutPipe() (io.ReadCloser, *os.File, error) {
	var p, wake [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		for _, fd := range []int{p[0], p[1], wake[0], wake[1]} {
			unix.Close(fd)
		}
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	r := &pollReader{fd: p[0], wakeR: wake[0], wakeW: wake[1]}
	// The write end goes to the child as an ordinary (blocking) file.
	return r, os.NewFile(uintptr(p[1]), "|1"), nil
}

// pollReader reads a non-blocking pipe with poll(2) and read(2) called
// directly. One goroutine reads at a time (the connection's reader); Close
// may come from any goroutine: it closes the wake pipe's write end, which
// makes a blocked poll return, and the descriptors are released by
// whichever of Close and the interrupted Read comes last, so a descriptor
// number is never closed while a syscall may still use it.
type pollReader struct {
	fd, wakeR, wakeW int

	mu      sync.Mutex
	reading bool
	closed  bool
	freed   bool
}

func (r *pollReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, os.ErrClosed
	}
	r.reading = true
	r.mu.Unlock()

	n, err := r.read(p)

	r.mu.Lock()
	r.reading = false
	if r.closed {
		r.free()
		if err == nil && n == 0 {
			err = os.ErrClosed
		}
	}
	r.mu.Unlock()
	return n, err
}

// read waits for data (or the wake-up) and reads it.
func (r *pollReader) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	fds := [2]unix.PollFd{
		{Fd: int32(r.fd), Events: unix.POLLIN},
		{Fd: int32(r.wakeR), Events: unix.POLLIN},
	}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds[:], -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return 0, os.NewSyscallError("poll", err)
		}
		if fds[1].Revents != 0 {
			return 0, os.ErrClosed
		}
		if fds[0].Revents == 0 {
			continue
		}
		for {
			n, err := unix.Read(r.fd, p)
			switch {
			case err == nil && n == 0:
				return 0, io.EOF
			case err == nil:
				return n, nil
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
			default:
				return 0, os.NewSyscallError("read", err)
			}
			break // EAGAIN: poll again
		}
	}
}

// Close interrupts a blocked Read; later Reads return os.ErrClosed.
func (r *pollReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	unix.Close(r.wakeW)
	if !r.reading {
		r.free()
	}
	return nil
}

// free closes the read descriptors once; r.mu is held.
func (r *pollReader) free() {
	if !r.freed {
		r.freed = true
		unix.Close(r.fd)
		unix.Close(r.wakeR)
	}
}
