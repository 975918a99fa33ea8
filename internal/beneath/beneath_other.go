//go:build !unix

package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Without openat, names are resolved by an os.Root, which keeps them
// inside the directory (it may follow a link that stays inside).

// OpenDir opens the directory at p. p is resolved by name: pass only a
// path no tenant can change.
func OpenDir(p string) (*Dir, error) {
	r, err := os.OpenRoot(p)
	if err != nil {
		return nil, err
	}
	f, err := r.Open(".")
	r.Close()
	if err != nil {
		return nil, err
	}
	return &Dir{f: f, name: p}, nil
}

func (d *Dir) root() (*os.Root, error) { return os.OpenRoot(d.f.Name()) }

func (d *Dir) open(rel string, dir bool) (*os.File, error) {
	r, err := d.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if fi, err := r.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%w: %s", ErrEscapes, rel)
	}
	f, err := r.Open(strings.ReplaceAll(rel, "/", string(os.PathSeparator)))
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && dir && !fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("beneath: %s is not a directory", rel)
	}
	return f, nil
}

func (d *Dir) mkdir(name string, perm os.FileMode) error {
	r, err := d.root()
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Mkdir(name, perm)
}

func (d *Dir) create(name string, perm os.FileMode) (*os.File, error) {
	r, err := d.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

func (d *Dir) removeAll(name string, _ int) error {
	r, err := d.root()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.RemoveAll(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "remove", Path: path.Join(d.name, name), Err: err}
	}
	return nil
}

func (d *Dir) readDir() ([]fs.DirEntry, error) {
	f, err := os.Open(d.f.Name())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}
