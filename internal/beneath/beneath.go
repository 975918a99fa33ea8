package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Errors. Each wraps or is matched with errors.Is.
var (
	// ErrNotRegular: the name is not a regular file (a directory, FIFO,
	// device, socket or symbolic link).
	ErrNotRegular = errors.New("beneath: not a regular file")
	// ErrTooLarge: the file is larger than the caller's limit.
	ErrTooLarge = errors.New("beneath: file too large")
	// ErrEscapes: the name is absolute, has a ".." component, or a
	// component is a symbolic link.
	ErrEscapes = errors.New("beneath: path leaves the directory or crosses a symbolic link")
	// ErrChanged: the file changed while it was read.
	ErrChanged = errors.New("beneath: file changed while it was read")
)

// MaxWalkEntries bounds the directory entries Walk looks at when the
// caller gives no smaller bound.
const MaxWalkEntries = 100_000

// Dir is an open directory; names are resolved beneath it.
type Dir struct {
	f    *os.File
	name string // for error messages
}

// Name is the path the Dir was opened with (for messages and logs only;
// never open it by name).
func (d *Dir) Name() string { return d.name }

// Close closes the directory's descriptor.
func (d *Dir) Close() error { return d.f.Close() }

// checkRel validates a slash-separated relative name: not empty, not
// absolute, no "." or ".." component, no empty component.
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return fmt.Errorf("%w: %q", ErrEscapes, rel)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%w: %q", ErrEscapes, rel)
		}
	}
	return nil
}

// OpenFile opens the regular file rel (slash-separated, relative) beneath
// d for reading. A symbolic link at any component, a FIFO, a device or a
// directory is refused without blocking; the FileInfo is fstat's on the
// returned descriptor.
func (d *Dir) OpenFile(rel string) (*os.File, fs.FileInfo, error) {
	if err := checkRel(rel); err != nil {
		return nil, nil, err
	}
	f, err := d.open(rel, false)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, rel, modeName(fi.Mode()))
	}
	return f, fi, nil
}

// ReadFile reads the regular file rel beneath d when it has at most max
// bytes. The size checked is fstat's on the descriptor read, and a file
// that grows or shrinks while it is read is ErrChanged.
func (d *Dir) ReadFile(rel string, max int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := d.OpenFile(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := ReadAll(f, fi, max)
	return b, fi, err
}

// ReadAll reads exactly fi.Size() bytes of f (opened by OpenFile, fi its
// FileInfo) when that is at most max; a different length is ErrChanged.
func ReadAll(f *os.File, fi fs.FileInfo, max int64) ([]byte, error) {
	if fi.Size() > max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), max)
	}
	b := make([]byte, fi.Size())
	n, err := io.ReadFull(f, b)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) && fi.Size() > 0 {
			return nil, fmt.Errorf("%w: %d of %d bytes read", ErrChanged, n, fi.Size())
		}
		if fi.Size() > 0 {
			return nil, err
		}
	}
	var one [1]byte
	if m, _ := f.Read(one[:]); m > 0 {
		return nil, fmt.Errorf("%w: grew past %d bytes", ErrChanged, fi.Size())
	}
	return b, nil
}

// OpenDir opens the directory rel beneath d.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	f, err := d.open(rel, true)
	if err != nil {
		return nil, err
	}
	return &Dir{f: f, name: path.Join(d.name, rel)}, nil
}

// MkdirOpen makes the directory name (one component) in d with perm, or
// accepts one that exists, and opens it; a symbolic link or other
// non-directory there is refused.
func (d *Dir) MkdirOpen(name string, perm os.FileMode) (*Dir, error) {
	if err := checkRel(name); err != nil || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: %q is not one path component", ErrEscapes, name)
	}
	if err := d.mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return d.OpenDir(name)
}

// MkdirAllOpen makes every component of rel (slash-separated) that is
// missing, with perm, and opens the last; no component may be a symbolic
// link.
func (d *Dir) MkdirAllOpen(rel string, perm os.FileMode) (*Dir, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	cur := d
	for _, c := range strings.Split(rel, "/") {
		next, err := cur.MkdirOpen(c, perm)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// Create creates the new file name (one component) in d for writing with
// perm; an existing entry of that name (a file, a symbolic link) is an
// error wrapping fs.ErrExist, so nothing is ever written through a link.
func (d *Dir) Create(name string, perm os.FileMode) (*os.File, error) {
	if err := checkRel(name); err != nil || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: %q is not one path component", ErrEscapes, name)
	}
	return d.create(name, perm)
}

// RemoveAll removes name (one component) from d and, when it is a
// directory, everything below it, descriptor by descriptor; a symbolic
// link is removed, never followed. A missing name is not an error.
func (d *Dir) RemoveAll(name string) error {
	if err := checkRel(name); err != nil || strings.Contains(name, "/") {
		return fmt.Errorf("%w: %q is not one path component", ErrEscapes, name)
	}
	return d.removeAll(name, 0)
}

// Names lists the names in d (every kind of entry), sorted.
func (d *Dir) Names() ([]string, error) {
	ents, err := d.readDir()
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

// Entry is a regular file Walk found: its slash-separated path relative
// to the walked Dir, the directory holding it (valid only during the
// callback) and its name there.
type Entry struct {
	Rel    string
	Parent *Dir
	Name   string
}

// Walk calls fn for every regular file below d, in lexical order per
// directory, descending into directories through their descriptors;
// symbolic links and other non-regular entries are skipped, never
// followed. At most maxEntries directory entries are looked at (0 ⇒
// MaxWalkEntries); past that Walk stops with an error naming the limit.
// fn returning fs.SkipAll stops the walk without an error.
func (d *Dir) Walk(maxEntries int, fn func(Entry) error) error {
	if maxEntries <= 0 {
		maxEntries = MaxWalkEntries
	}
	seen := 0
	err := d.walk("", &seen, maxEntries, 0, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// maxWalkDepth bounds the nesting Walk descends into.
const maxWalkDepth = 64

func (d *Dir) walk(prefix string, seen *int, maxEntries, depth int, fn func(Entry) error) error {
	if depth > maxWalkDepth {
		return fmt.Errorf("beneath: %s: directories nested deeper than %d", d.name, maxWalkDepth)
	}
	ents, err := d.readDir()
	if err != nil {
		return err
	}
	for _, e := range ents {
		*seen++
		if *seen > maxEntries {
			return fmt.Errorf("beneath: %s: more than %d directory entries", d.name, maxEntries)
		}
		rel := e.Name()
		if prefix != "" {
			rel = prefix + "/" + rel
		}
		switch {
		case e.Type().IsRegular():
			if err := fn(Entry{Rel: rel, Parent: d, Name: e.Name()}); err != nil {
				return err
			}
		case e.IsDir():
			sub, err := d.OpenDir(e.Name())
			if err != nil {
				continue // swapped for something else since it was listed
			}
			err = sub.walk(rel, seen, maxEntries, depth+1, fn)
			sub.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "irregular file"
}
