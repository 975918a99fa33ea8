package tools

import (
	"context"
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
// It has no Open: every open goes through OpenFile of guarded, which adds
// openGuard, and reads go through openRegular or openDir, which check the
// type of what they opened.
type fsys interface {
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

func (hostFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (hostFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (hostFS) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (hostFS) Readlink(name string) (string, error)         { return os.Readlink(name) }
func (hostFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (hostFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (hostFS) Remove(name string) error                     { return os.Remove(name) }

// guarded is the fsys every file tool is handed (see locate): each open
// through it carries openGuard, so no open a file tool makes can block,
// whatever the name turns out to be at the moment of the open (the atomic
// write's temporary file and its directory sync included).
type guarded struct{ fsys }

func (g guarded) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return g.fsys.OpenFile(name, flag|openGuard, perm)
}

// SpecialFileError is a path a file tool refuses because of what it is: a
// FIFO, a socket or a device (which could block a read for ever or has no
// content to read), or a directory where a file is wanted and the other
// way round.
type SpecialFileError struct {
	Path string // as the model gave it, or the tool's name for it
	Type string // what it is: "FIFO", "socket", "character device", …
	Want string // what the tool wanted: "a regular file" or "a directory"
}

func (e *SpecialFileError) Error() string {
	return fmt.Sprintf("%s is a %s, not %s; file tools open only regular files and directories", e.Path, e.Type, e.Want)
}

const (
	wantFile = "a regular file"
	wantDir  = "a directory"
)

// typeName names the file type in mode. Pure.
func typeName(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	default:
		return "irregular file"
	}
}

// openRegular opens the regular file name of f for reading. It looks
// before it opens (Stat opens nothing, so a device is never opened) and
// checks what it opened (the descriptor's fstat), so something other than
// a regular file is refused with a *SpecialFileError whether it was there
// when looked at or swapped in after; and the open itself cannot block
// (guarded). display names the path in errors.
func openRegular(f fsys, name, display string) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &SpecialFileError{Path: display, Type: typeName(fi.Mode()), Want: wantFile}
	}
	return openChecked(f, name, display)
}

// openChecked is openRegular without the look before the open, for names
// a directory listing has just reported as regular files.
func openChecked(f fsys, name, display string) (*os.File, fs.FileInfo, error) {
	fh, err := f.OpenFile(name, os.O_RDONLY|openGuard, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		fh.Close()
		return nil, nil, &SpecialFileError{Path: display, Type: typeName(fi.Mode()), Want: wantFile}
	}
	return fh, fi, nil
}

// openDir opens the directory name of f; O_DIRECTORY refuses anything
// else before it is opened, and the descriptor's fstat checks again.
func openDir(f fsys, name, display string) (*os.File, error) {
	d, err := f.OpenFile(name, os.O_RDONLY|openDirFlag|openGuard, 0)
	if err != nil {
		return nil, err
	}
	fi, err := d.Stat()
	if err != nil {
		d.Close()
		return nil, err
	}
	if !fi.IsDir() {
		d.Close()
		return nil, &SpecialFileError{Path: display, Type: typeName(fi.Mode()), Want: wantDir}
	}
	return d, nil
}

// readChunk is the most a file tool reads between two looks at its
// context: a cancel is seen within one chunk, whatever the content (a
// file without newlines included).
const readChunk = 64 << 10

// errReadLimit is boundedReader's end: the call's read limit was reached.
var errReadLimit = errors.New("tools: read limit reached")

// boundedReader reads r in pieces of at most readChunk bytes, checking ctx
// before each, and gives at most left bytes in all, then errReadLimit.
// ctxErr records a cancellation it returned.
type boundedReader struct {
	ctx    context.Context
	r      io.Reader
	left   int64
	ctxErr error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		b.ctxErr = err
		return 0, err
	}
	if b.left <= 0 {
		return 0, errReadLimit
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	if len(p) > readChunk {
		p = p[:readChunk]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// sizeText shows a byte count the way limits are documented: "64 MiB"
// when it is a whole number of MiB, else "N bytes". Pure.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

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
		return target{fs: guarded{hostFS{}}, name: abs, display: p, close: func() {}}, nil
	}
	rel, err := Locate(c.workDir, p)
	if err != nil {
		return target{}, err
	}
	root, err := os.OpenRoot(c.workDir)
	if err != nil {
		return target{}, fmt.Errorf("open this job's root %s: %v", c.workDir, err)
	}
	return target{fs: guarded{root}, name: rel, display: p, close: func() { root.Close() }}, nil
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

// MaxDirEntries bounds the entries read from one directory: list_dir and
// search_files sort and use the first MaxDirEntries the file system
// returns, and say so, so a directory of millions of names costs a
// bounded amount of memory and time.
const MaxDirEntries = 1 << 16

// readDir lists the directory name of f: at most limit entries (more
// reports that there were others), read in batches with a look at ctx
// between them.
func readDir(ctx context.Context, f fsys, name, display string, limit int) (ents []fs.DirEntry, more bool, err error) {
	d, err := openDir(f, name, display)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	for len(ents) < limit {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		batch, err := d.ReadDir(min(1024, limit-len(ents)))
		ents = append(ents, batch...)
		if err == io.EOF {
			return ents, false, nil
		}
		if err != nil {
			return ents, false, err
		}
	}
	extra, _ := d.ReadDir(1)
	return ents, len(extra) > 0, nil
}

// maxLinkHops bounds the symlinks followed to find a write's real target.
const maxLinkHops = 40

// linkTarget follows symlinks at name to the file a write should replace,
// so writing through a link changes the linked file rather than the link.
// On the host that is filepath.EvalSymlinks; inside a root each hop is
// resolved against the root (os.Root refuses the ones that leave it).
func (c *config) linkTarget(f fsys, name string) (string, error) {
	if !c.confine {
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
// link; an existing directory, FIFO, socket or device is refused, not
// replaced.
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
		if !fi.Mode().IsRegular() {
			return &SpecialFileError{Path: name, Type: typeName(fi.Mode()), Want: wantFile}
		}
		mode = fi.Mode().Perm()
	}
	return atomicfile.Write(f, name, data, mode)
}
