package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/odekrun/odek/internal/atomicfile"
)

// maxStateBytes bounds the state file read at start-up.
const maxStateBytes = 64 << 20

// fileState is the bot's StateStore in one JSON file, replaced atomically
// (write to a temporary file in the same directory, fsync, rename, fsync
// the directory), so a crash leaves the old or the new snapshot.
type fileState struct{ path string }

func (f fileState) Load(ctx context.Context) ([]byte, error) {
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxStateBytes {
		return nil, errors.New("state file is larger than 64 MiB; not read")
	}
	return os.ReadFile(f.path)
}

func (f fileState) Save(ctx context.Context, data []byte) error {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(f.path, data, 0o600)
}
