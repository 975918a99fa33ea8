// Package chatdir names the directories of chats under a chats directory
// (the artifacts directory the bot and the workers share, or
// $ODEK_HOME/chats): <chats>/<Name(key, chat id)>, where the name is an
// HMAC of the chat id under a per-install secret, so a job that knows
// another chat's id cannot guess its directory.
//
// Why: Landlock mediates opening, reading and writing a path, not looking
// it up, so a confined job may stat(2) or open with O_PATH any path whose
// name it can guess and learn whether it exists, its size and its times.
// With directories named by the chat id, chat A's job could probe chat B's
// files by name (issue 21, round 2). The name of a job's own directory
// tells nothing about the key, and the chats directory cannot be listed
// or read by any job: the sandbox grants a job its own chat's directory
// and nothing above it.
//
// The key is KeyFile in the chats directory itself: the one directory
// every process that names chat directories shares (the bot and every
// worker mount the same volume there), created at first use from
// crypto/rand (atomically: written aside, then hard-linked into place, so
// concurrent first uses agree) and never changed. Losing it loses the
// mapping from chats to their directories; back it up with the volume.
//
// Directories named by the bare chat id (the layout before this package)
// are renamed to their new name on first use (Ensure).
//
// Concurrency and ownership: every function is safe for concurrent use;
// keys are read once per process and chats directory and cached.
package chatdir

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// KeyFile is the name of the key file in the chats directory.
const KeyFile = ".odek-chat-key"

// KeyLen is the size of the key in bytes.
const KeyLen = 32

// NameLen is the length of a chat directory's name: 128 bits in hex.
const NameLen = 32

var keys sync.Map // absolute chats directory → []byte

// Key returns the key of the chats directory, creating it (0600) when
// there is none. It fails when the file is not a regular file of KeyLen
// bytes: a key that changed would orphan every chat's directory.
func Key(chats string) ([]byte, error) {
	abs, err := filepath.Abs(chats)
	if err != nil {
		return nil, fmt.Errorf("chatdir: %w", err)
	}
	if k, ok := keys.Load(abs); ok {
		return k.([]byte), nil
	}
	k, err := readKey(abs)
	if errors.Is(err, os.ErrNotExist) {
		if err := createKey(abs); err != nil {
			return nil, err
		}
		k, err = readKey(abs)
	}
	if err != nil {
		return nil, err
	}
	actual, _ := keys.LoadOrStore(abs, k)
	return actual.([]byte), nil
}

func readKey(chats string) ([]byte, error) {
	path := filepath.Join(chats, KeyFile)
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("chatdir: key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != KeyLen {
		return nil, fmt.Errorf("chatdir: key %s must be a regular file of %d bytes (found %s, %d bytes); it names every chat's directory, restore it rather than replace it", path, KeyLen, fi.Mode().Type(), fi.Size())
	}
	k := make([]byte, KeyLen)
	if _, err := io.ReadFull(f, k); err != nil {
		return nil, fmt.Errorf("chatdir: key %s: %w", path, err)
	}
	return k, nil
}

// createKey writes a new key aside and links it into place; when another
// process linked one first, theirs stays and is the key.
func createKey(chats string) error {
	if err := os.MkdirAll(chats, 0o700); err != nil {
		return fmt.Errorf("chatdir: %w", err)
	}
	k := make([]byte, KeyLen)
	if _, err := rand.Read(k); err != nil {
		return fmt.Errorf("chatdir: %w", err)
	}
	tmp, err := os.CreateTemp(chats, KeyFile+".new-*")
	if err != nil {
		return fmt.Errorf("chatdir: create the key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(k)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("chatdir: write the key: %w", err)
	}
	if err := os.Link(tmp.Name(), filepath.Join(chats, KeyFile)); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("chatdir: create the key: %w", err)
	}
	return nil
}

// Name is the directory name of chatID under key: the first 128 bits of
// HMAC-SHA256(key, "odek-chat-dir/v1\0" + decimal chat id), in hex. Pure.
func Name(key []byte, chatID int64) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("odek-chat-dir/v1\x00" + strconv.FormatInt(chatID, 10)))
	return hex.EncodeToString(m.Sum(nil)[:NameLen/2])
}

// Of is the directory name of chatID under the chats directory's key
// (created when missing).
func Of(chats string, chatID int64) (string, error) {
	k, err := Key(chats)
	if err != nil {
		return "", err
	}
	return Name(k, chatID), nil
}

// Ensure returns the path of chatID's directory under chats, creating it
// (0700) when missing. A directory left by the old layout, named by the
// bare chat id, is renamed to the new name first, when the new one does
// not exist yet.
func Ensure(chats string, chatID int64) (string, error) {
	name, err := Of(chats, chatID)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(chats, name)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		old := filepath.Join(chats, strconv.FormatInt(chatID, 10))
		if fi, err := os.Lstat(old); err == nil && fi.IsDir() {
			// Another process migrating at the same moment makes one of
			// the renames fail with ENOENT; the directory has moved
			// either way.
			if err := os.Rename(old, dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("chatdir: move chat %d's directory to its new name: %w", chatID, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("chatdir: chat %d's directory: %w", chatID, err)
	}
	return dir, nil
}
