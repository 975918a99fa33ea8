//go:build !linux

package events

import "os"

// datasync flushes f to stable storage; platforms without fdatasync use
// fsync (on darwin, os.File.Sync issues F_FULLFSYNC).
func datasync(f *os.File) error { return f.Sync() }
