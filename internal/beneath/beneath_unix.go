//go:build unix

package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	readFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// OpenDir opens the directory at p, which must not itself be a symbolic
// link. p is resolved by name: pass only a path no tenant can change.
func OpenDir(p string) (*Dir, error) {
	fd, err := unix.Open(p, dirFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: mapErr(err)}
	}
	return &Dir{f: os.NewFile(uintptr(fd), p), name: p}, nil
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

// open opens rel beneath d with the read flags (and O_DIRECTORY when dir).
func (d *Dir) open(rel string, dir bool) (*os.File, error) {
	flags := readFlags
	if dir {
		flags = dirFlags
	}
	fd, err := openBeneath(d.fd(), rel, flags)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path.Join(d.name, rel), Err: mapErr(err)}
	}
	return os.NewFile(uintptr(fd), path.Join(d.name, rel)), nil
}

// openComponents is the fallback without openat2: one openat per
// component, each O_NOFOLLOW, so no symbolic link is followed and ".."
// never appears (checkRel refused it).
func openComponents(dirfd int, rel string, flags int) (int, error) {
	parts := strings.Split(rel, "/")
	cur := dirfd
	for i, c := range parts {
		fl := dirFlags | unix.O_NONBLOCK
		if i == len(parts)-1 {
			fl = flags
		}
		fd, err := unix.Openat(cur, c, fl, 0)
		if cur != dirfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

func (d *Dir) mkdir(name string, perm os.FileMode) error {
	if err := unix.Mkdirat(d.fd(), name, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: path.Join(d.name, name), Err: mapErr(err)}
	}
	return nil
}

func (d *Dir) create(name string, perm os.FileMode) (*os.File, error) {
	fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: path.Join(d.name, name), Err: mapErr(err)}
	}
	return os.NewFile(uintptr(fd), path.Join(d.name, name)), nil
}

// maxRemoveDepth bounds the nesting RemoveAll descends into.
const maxRemoveDepth = 64

func (d *Dir) removeAll(name string, depth int) error {
	err := unix.Unlinkat(d.fd(), name, 0)
	switch {
	case err == nil || errors.Is(err, unix.ENOENT):
		return nil
	case !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM):
		return &fs.PathError{Op: "remove", Path: path.Join(d.name, name), Err: err}
	}
	if depth >= maxRemoveDepth {
		return fmt.Errorf("beneath: remove %s: directories nested deeper than %d", path.Join(d.name, name), maxRemoveDepth)
	}
	sub, err := d.OpenDir(name)
	if err != nil {
		return err
	}
	ents, err := sub.readDir()
	if err == nil {
		for _, e := range ents {
			if err = sub.removeAll(e.Name(), depth+1); err != nil {
				break
			}
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: path.Join(d.name, name), Err: err}
	}
	return nil
}

// readDir lists d through a fresh descriptor of it (so a Dir can be
// listed more than once), sorted by name.
func (d *Dir) readDir() ([]fs.DirEntry, error) {
	fd, err := unix.Openat(d.fd(), ".", dirFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.name, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.name)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}

// mapErr turns the kernel's answers to a crossed link or an escape into
// ErrEscapes.
func mapErr(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return fmt.Errorf("%w (%v)", ErrEscapes, err)
	}
	return err
}
