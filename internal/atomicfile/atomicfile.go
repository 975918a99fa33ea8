// Package atomicfile replaces a file so that a reader, or the file system
// after a crash, sees either the old content or the new one, never a mix:
// the data goes to a new temporary file in the same directory, which is
// given its mode, synced, and renamed over the name; then the directory is
// synced so the rename itself survives a crash.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is where a write happens. *os.Root satisfies it (names relative to the
// root, never leaving it); Host is the process's own view, names being
// paths.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Rename(oldname, newname string) error
	Remove(name string) error
}

// Host is the unconfined FS: the os functions on paths.
type Host struct{}

func (Host) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (Host) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (Host) Remove(name string) error             { return os.Remove(name) }

// WriteFile replaces the file at path with data, with permission bits
// perm whatever the umask (an existing file's mode is not kept: pass it in
// perm to keep it). The directory must exist.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(Host{}, path, data, perm)
}

// Write is WriteFile on fsys. name itself is replaced: a symlink there is
// replaced by the file, not followed (resolve it first to write its
// target). The temporary file, "."+base+".tmp-"+random hex beside name, is
// created 0600 and exclusively (never through an existing file or link),
// and removed on any failure. A failure to sync the directory, which some
// file systems cannot do, is not reported: the data itself was synced.
func Write(fsys FS, name string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Dir(name), filepath.Base(name)
	var (
		tmp     *os.File
		tmpName string
		err     error
	)
	for range 10 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		tmpName = filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(b[:]))
		tmp, err = fsys.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("atomicfile: creating a temporary file for %s: %w", name, err)
	}
	step, err := finish(tmp, data, perm)
	if err == nil {
		step = "renaming the temporary file over"
		err = fsys.Rename(tmpName, name)
	}
	if err != nil {
		_ = fsys.Remove(tmpName)
		return fmt.Errorf("atomicfile: %s %s: %w", step, name, err)
	}
	if d, err := fsys.OpenFile(dir, os.O_RDONLY, 0); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// finish sets the mode, writes, syncs and closes f; step names what
// failed.
func finish(f *os.File, data []byte, perm fs.FileMode) (step string, err error) {
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			step, err = "closing the temporary file for", cerr
		}
	}()
	if err := f.Chmod(perm.Perm()); err != nil {
		return "setting the mode of the temporary file for", err
	}
	if _, err := f.Write(data); err != nil {
		return "writing the temporary file for", err
	}
	if err := f.Sync(); err != nil {
		return "syncing the temporary file for", err
	}
	return "", nil
}
