package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// DefaultMaxLineBytes is FileOptions.MaxLineBytes when zero: 1 MiB.
const DefaultMaxLineBytes = 1 << 20

// FileOptions configure a FileSink. The zero value is the production
// setting.
type FileOptions struct {
	// MaxLineBytes bounds one JSON line, newline included, in bytes; 0 means
	// DefaultMaxLineBytes. An event over it is written shrunk (see
	// FileSink.Write).
	MaxLineBytes int
	// NoSync skips the fdatasync after each event. For tests and
	// benchmarks only: without it an event may be lost on power failure
	// although Write returned.
	NoSync bool
}

// FileSink writes events as JSON lines to a file opened by OpenFile: one
// write(2) per event, then fdatasync before Write returns, so every
// written event is on stable storage and no line is ever interleaved or
// torn by another write of this sink. It is safe for concurrent use; the
// caller owns it and closes it after the Emitter using it is closed.
type FileSink struct {
	path   string
	max    int
	noSync bool

	mu     sync.Mutex
	f      *os.File
	buf    bytes.Buffer // reused line buffer
	enc    *json.Encoder
	closed bool
}

// OpenFile opens (creating if needed) the JSONL events file at path for
// appending. It enforces the contract's rules for the events file:
//
//   - the parent directory must exist (ErrNoParentDir names it);
//   - a symbolic link at path is refused (ErrSymlink), both by an Lstat
//     check and by opening with O_NOFOLLOW, so a link swapped in after the
//     check cannot redirect the stream;
//   - anything but a regular file is refused (ErrNotRegular); the open does
//     not block on a FIFO;
//   - the file is opened O_WRONLY|O_APPEND|O_CREATE|O_CLOEXEC with mode
//     0600, and a pre-existing file with other permission bits is changed
//     to 0600 (fchmod) before anything is written.
func OpenFile(path string, opts FileOptions) (*FileSink, error) {
	if path == "" {
		return nil, fmt.Errorf("events: open events file: empty path: %w", fs.ErrInvalid)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s does not exist (events file %s)", ErrNoParentDir, dir, path)
	case err != nil:
		return nil, fmt.Errorf("events: open events file %s: %w", path, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%w: %s is not a directory (events file %s)", ErrNoParentDir, dir, path)
	}
	if fi, err := os.Lstat(path); err == nil {
		if err := checkMode(path, fi.Mode()); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("events: open events file %s: %w", path, err)
	}
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkMode(path, fi.Mode())
	}
	if err == nil && fi.Mode().Perm() != 0o600 {
		if cerr := f.Chmod(0o600); cerr != nil {
			err = fmt.Errorf("events: restrict events file %s to mode 0600: %w", path, cerr)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	limit := opts.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	s := &FileSink{path: path, max: limit, noSync: opts.NoSync, f: f}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s, nil
}

func checkMode(path string, m fs.FileMode) error {
	switch {
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s", ErrSymlink, path)
	case !m.IsRegular():
		return fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, fileKind(m))
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}

// Path returns the path the sink was opened with.
func (s *FileSink) Path() string { return s.path }

// Write appends ev as one JSON line and, unless NoSync, waits for
// fdatasync. An event whose line would exceed MaxLineBytes is written
// shrunk instead (see shrink): data values longer than 256 bytes encoded
// are dropped, their keys listed in data.truncated_fields, and
// data.line_bytes gives the original line length; if even that is too
// long, all data is dropped. Only when the bare envelope does not fit does
// Write return a *LineTooLongError and write nothing.
func (s *FileSink) Write(ev *Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.encode(ev); err != nil {
		return err
	}
	if n := s.buf.Len(); n > s.max {
		for level := 1; s.buf.Len() > s.max && level <= 2; level++ {
			if err := s.encode(shrink(ev, n, level)); err != nil {
				return err
			}
		}
		if s.buf.Len() > s.max {
			return &LineTooLongError{Seq: ev.Seq, Type: ev.Type, Limit: s.max, Observed: s.buf.Len()}
		}
	}
	if _, err := s.f.Write(s.buf.Bytes()); err != nil {
		return fmt.Errorf("events: write event %d to %s: %w", ev.Seq, s.path, err)
	}
	if s.noSync {
		return nil
	}
	if err := datasync(s.f); err != nil {
		return fmt.Errorf("events: sync event %d to %s: %w", ev.Seq, s.path, err)
	}
	return nil
}

func (s *FileSink) encode(ev *Event) error {
	s.buf.Reset()
	if err := s.enc.Encode(ev); err != nil {
		return fmt.Errorf("events: encode event %d (%s): %w", ev.Seq, ev.Type, err)
	}
	return nil
}

// Close closes the file. Later Writes return ErrClosed; a second Close
// returns nil.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("events: close %s: %w", s.path, err)
	}
	return nil
}

// shrinkKeep is the largest encoded data value kept by a level-1 shrink.
const shrinkKeep = 256

// shrink returns a copy of ev for a line that was lineBytes long. Level 1
// drops data values whose JSON encoding exceeds shrinkKeep bytes; level 2
// drops all data. Either way data gains truncated_fields (the dropped
// keys, sorted) and line_bytes, so the event keeps its place in the
// stream, its type and its small fields (call ids, counts).
func shrink(ev *Event, lineBytes, level int) *Event {
	out := *ev
	data := make(map[string]any, len(ev.Data)+2)
	var dropped []string
	for k, v := range ev.Data {
		if level == 1 {
			if b, err := json.Marshal(v); err == nil && len(b) <= shrinkKeep {
				data[k] = v
				continue
			}
		}
		dropped = append(dropped, k)
	}
	slices.Sort(dropped)
	if dropped == nil {
		dropped = []string{}
	}
	data["truncated_fields"] = dropped
	data["line_bytes"] = lineBytes
	out.Data = data
	return &out
}
