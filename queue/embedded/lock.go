package embedded

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LockedError is returned by Open when another process holds the store.
type LockedError struct {
	Path string // the store file
	PID  int    // the holder's process id, 0 when it could not be read
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("embedded store %s is in use by %s (one odek-bot per ODEK_HOME; stop it first; odek queue backup works while it runs)", e.Path, who)
}

// ErrLocked matches every *LockedError.
var ErrLocked = errors.New("embedded store: in use by another process")

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockFile takes an exclusive, non-blocking flock on path (created 0600)
// and writes this process's id into it. The kernel drops the lock when the
// process dies, however it dies, so a stale file never blocks a start.
func lockFile(path, store string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded store: lock file: %w", err)
	}
	if held, err := tryLockExclusive(f); err != nil || held {
		var b [32]byte
		n, _ := f.ReadAt(b[:], 0)
		f.Close()
		if held {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
			return nil, &LockedError{Path: store, PID: pid}
		}
		return nil, fmt.Errorf("embedded store: lock %s: %w", path, err)
	}
	// The pid only names the holder in another process's error; failing
	// to write it does not weaken the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
