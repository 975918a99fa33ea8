package mcpclient

import (
	"errors"
	"io"
	"os"
	"testing"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestStdoutPipeReadsThenEOF(t *testing.T) {
	before := openFDs(t)
	r, w, err := newStdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write([]byte("hello\n"))
		w.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF = %d, %v", n, err)
	}
	r.Close()
	if n, err := r.Read(make([]byte, 8)); n != 0 || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close = %d, %v", n, err)
	}
	if after := openFDs(t); after != before {
		t.Fatalf("open descriptors %d → %d", before, after)
	}
}

// TestStdoutPipeCloseInterruptsRead: Close wakes a Read blocked on a pipe
// whose write end is still open (a grandchild may hold it), and both
// descriptors are released once the Read returned.
func TestStdoutPipeCloseInterruptsRead(t *testing.T) {
	before := openFDs(t)
	r, w, err := newStdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := r.Read(make([]byte, 64))
		done <- err
	}()
	<-started
	r.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("blocked Read returned %v, want os.ErrClosed", err)
	}
	w.Close()
	if after := openFDs(t); after != before {
		t.Fatalf("open descriptors %d → %d", before, after)
	}
}
