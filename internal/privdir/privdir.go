// Package privdir makes private directories whose names cannot be
// guessed.
//
// A confined job may stat(2) any path it can name (Landlock does not
// mediate lookups), and os.MkdirTemp's names carry 32 random bits, few
// enough to enumerate or to pre-create: another chat's job could learn
// that a run exists, or plant the name first. Make names them with 128
// bits from crypto/rand and creates them with mkdir(2), which fails on
// any existing entry (a symlink too) instead of reusing it — the O_EXCL
// of directories.
package privdir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RandomBytes is how many random bytes a name carries (128 bits).
const RandomBytes = 16

// Make creates a new directory in parent (os.TempDir() when "") named
// prefix followed by 32 hex digits of crypto/rand, with mode 0700, and
// returns its path. It never returns a directory that existed before.
func Make(parent, prefix string) (string, error) {
	return makeWith(parent, prefix, rand.Reader)
}

func makeWith(parent, prefix string, rnd io.Reader) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	for range 10 {
		var b [RandomBytes]byte
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return "", fmt.Errorf("privdir: random name: %w", err)
		}
		dir := filepath.Join(parent, prefix+hex.EncodeToString(b[:]))
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			// The umask may only have cleared bits; say so exactly.
			if err := os.Chmod(dir, 0o700); err != nil {
				os.Remove(dir)
				return "", fmt.Errorf("privdir: %w", err)
			}
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("privdir: %w", err)
		}
	}
	return "", errors.New("privdir: no unused directory name in 10 tries")
}
