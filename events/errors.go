package events

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of them (or an
// error of the operating system), so callers match with errors.Is.
var (
	// ErrClosed: the Emitter or FileSink was closed. Final returns it when
	// the emitter was already closed; FileSink.Write after Close.
	ErrClosed = errors.New("events: closed")
	// ErrSinkPanic: a Sink panicked while writing an event. The Emitter
	// (and Multi) recover the panic and report it wrapped in *SinkError.
	ErrSinkPanic = errors.New("events: sink panicked")
	// ErrNoParentDir: the directory that should hold the events file does
	// not exist or is not a directory. OpenFile never creates it.
	ErrNoParentDir = errors.New("events: parent directory of the events file is missing")
	// ErrSymlink: the events file path is a symbolic link. OpenFile refuses
	// it, both when it checks the path and when it opens it.
	ErrSymlink = errors.New("events: events file path is a symbolic link")
	// ErrNotRegular: the events file path names something other than a
	// regular file (a directory, FIFO, device, socket).
	ErrNotRegular = errors.New("events: events file is not a regular file")
	// ErrLineTooLong: an event does not fit in FileOptions.MaxLineBytes even
	// after its large data fields were dropped; see *LineTooLongError.
	ErrLineTooLong = errors.New("events: event line too long")
)

// SinkError reports one event the sink failed to take: its Write returned
// an error or panicked. It reaches Options.OnError, and Final returns it
// when the final event was not written.
type SinkError struct {
	Seq  uint64
	Type Type
	// Failures counts the sink failures of this Emitter so far, this one
	// included. OnError is called for the 1st, 2nd, 4th, 8th, … failure, so
	// a broken disk does not flood the log; Failures tells how many were
	// skipped.
	Failures uint64
	// Err is the sink's error, or wraps ErrSinkPanic.
	Err error
}

func (e *SinkError) Error() string {
	return fmt.Sprintf("events: sink failed on event %d (%s), failure %d: %v", e.Seq, e.Type, e.Failures, e.Err)
}

// Unwrap returns the sink's error.
func (e *SinkError) Unwrap() error { return e.Err }

// LineTooLongError reports an event whose JSON line exceeds the file sink's
// limit even in its shrunk form (see FileSink.Write).
type LineTooLongError struct {
	Seq  uint64
	Type Type
	// Limit is FileOptions.MaxLineBytes in effect; Observed the length of
	// the smallest line the event could be shrunk to, newline included.
	Limit, Observed int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("events: event %d (%s) needs a line of %d bytes, exceeding max_line_bytes=%d", e.Seq, e.Type, e.Observed, e.Limit)
}

// Unwrap returns ErrLineTooLong.
func (e *LineTooLongError) Unwrap() error { return ErrLineTooLong }

// panicError turns a recovered panic value into an error wrapping
// ErrSinkPanic.
func panicError(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %w", ErrSinkPanic, err)
	}
	return fmt.Errorf("%w: %v", ErrSinkPanic, v)
}
