package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/odekrun/odek/internal/atomicfile"
)

// fsys is what the file tools do to files: *os.Root for a confined run
// (names relative to the root; `..`, absolute paths and symlinks that
// leave it fail), hostFS otherwise (absolute names, the process's view).
type fsys interface {
	Open(name string) (*os.File, error)
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
	MkdirAll(name string, perm fs.FileMode) error
	Rename(oldname, newname string) error
	Remove(name string) error
}

// hostFS is the unconfined fsys: the os functions on absolute paths.
type hostFS struct{}

func (hostFS) Open(name string) (*os.File, error) { return os.Open(name) }
func (hostFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (hostFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (hostFS) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (hostFS) Readlink(name string) (string, error)         { return os.Readlink(name) }
func (hostFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (hostFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (hostFS) Remove(name string) error                     { return os.Remove(name) }

// OutsideRootError is a path argument that leads out of a confined run's
// root, lexically (`..`, an absolute path elsewhere, `~`) or through a
// symlink.
type OutsideRootError struct {
	Path string // as the model gave it
	Root string
}

func (e *OutsideRootError) Error() string {
	return fmt.Sprintf("path %q is outside this job's root %s: only files under it can be reached", e.Path, e.Root)
}

// Locate maps a file tool's path argument to a name inside root, the
// confined view: relative paths are taken from root, absolute ones must
// lie inside it, and `~`, `..` past root or an empty result are refused
// with *OutsideRootError. The name is clean and relative ("." for root
// itself); symlinks are not looked at here (os.Root refuses those that
// leave root when the name is opened). root must be absolute and clean.
// Pure.
func Locate(root, p string) (string, error) {
	if p == "" {
		p = "."
	}
	if p == "~" || strings.HasPrefix(p, "~/") || strings.ContainsRune(p, 0) {
		return "", &OutsideRootError{Path: p, Root: root}
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(root, p)
	}
	abs = filepath.Clean(abs)
	if !within(root, abs) {
		return "", &OutsideRootError{Path: p, Root: root}
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &OutsideRootError{Path: p, Root: root}
	}
	return rel, nil
}

// target is one opened view of a path argument: where to act (fs, name)
// and how to show the path (display).
type target struct {
	fs      fsys
	name    string
	display string
	close   func()
}

// locate opens the view of path argument p: an os.Root at the working
// directory when the tools are confined, the host otherwise. The caller
// calls close.
func (c *config) locate(p string) (target, error) {
	if !c.confine {
		abs := c.resolve(p)
		return target{fs: hostFS{}, name: abs, display: p, close: func() {}}, nil
	}
	rel, err := Locate(c.workDir, p)
	if err != nil {
		return target{}, err
	}
	root, err := os.OpenRoot(c.workDir)
	if err != nil {
		return target{}, fmt.Errorf("open this job's root %s: %v", c.workDir, err)
	}
	return target{fs: root, name: rel, display: p, close: func() { root.Close() }}, nil
}

// pathError rewrites an error of a confined run's os.Root that means the
// path left the root into an *OutsideRootError.
func (c *config) pathError(p string, err error) error {
	if c.confine && escapes(err) {
		return &OutsideRootError{Path: p, Root: c.workDir}
	}
	return err
}

// escapes reports whether err is os.Root's refusal of a path leading out
// of it (os keeps that error unexported; its text is stable).
func escapes(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// readDir lists the directory name of f.
func readDir(f fsys, name string) ([]fs.DirEntry, error) {
	d, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// readAll reads the file name of f.
func readAll(f fsys, name string) ([]byte, error) {
	fh, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(fh)
}

// maxLinkHops bounds the symlinks followed to find a write's real target.
const maxLinkHops = 40

// linkTarget follows symlinks at name to the file a write should replace,
// so writing through a link changes the linked file rather than the link.
// On the host that is filepath.EvalSymlinks; inside a root each hop is
// resolved against the root (os.Root refuses the ones that leave it).
func (c *config) linkTarget(f fsys, name string) (string, error) {
	if _, ok := f.(hostFS); ok {
		if r, err := filepath.EvalSymlinks(name); err == nil {
			return r, nil
		}
		return name, nil
	}
	for range maxLinkHops {
		fi, err := f.Lstat(name)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return name, nil // absent or not a link: write here
		}
		dest, err := f.Readlink(name)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(dest) {
			rel, err := Locate(c.workDir, dest)
			if err != nil {
				return "", err
			}
			name = rel
		} else {
			name = filepath.Join(filepath.Dir(name), dest)
			if _, err := Locate(c.workDir, filepath.Join(c.workDir, name)); err != nil {
				return "", err
			}
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", name)
}

// atomicWrite replaces the file name of f with data through atomicfile (a
// temporary file in the same directory, fsync, rename, directory fsync).
// An existing file keeps its mode; a symlink's target is written, not the
// link.
func (c *config) atomicWrite(f fsys, name string, data []byte) error {
	name, err := c.linkTarget(f, name)
	if err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := f.Stat(name); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", name)
		}
		mode = fi.Mode().Perm()
	}
	return atomicfile.Write(f, name, data, mode)
}
