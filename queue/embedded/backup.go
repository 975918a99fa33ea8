package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Hot backup: a consistent copy of the store file taken while the process
// that holds it goes on (one bbolt read transaction; writers are not
// stopped). The process that holds the store serves it on its admin
// socket, <store>.sock: a unix socket in ODEK_HOME (0700) with mode 0600,
// so only the store's owner can connect; no TCP port carries it. `odek
// queue backup --store PATH OUT` uses the socket when the store is held
// and opens the file itself when it is not.

// SocketPath is the admin socket of the store at path.
func SocketPath(storePath string) string { return storePath + ".sock" }

// Backup writes a consistent copy of the store to w and returns its size.
// The store stays in use meanwhile.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("embedded store: backup of %s: %w", s.path, err)
	}
	return n, nil
}

// WriteBackup writes a copy of the store to path: 0600, synced, renamed
// into place, so path is either the old file or a whole copy.
func WriteBackup(path string, copy func(io.Writer) (int64, error)) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: a no-op
	n, err := copy(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return n, fmt.Errorf("backup to %s: %w", path, err)
	}
	return n, nil
}

// ServeAdmin serves the admin socket (GET /backup, the inspection of
// admin.go and the queue changes of adminwrite.go) until Close. A socket
// file left by a process that died is replaced: the store's lock says no
// other process serves it.
func (s *Store) ServeAdmin() error {
	sock := SocketPath(s.path)
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("embedded store: admin socket: %w", err)
	}
	// Bound in a fresh 0700 directory, made 0600 and only then moved into
	// place: no instant in which another user could connect.
	tmp, err := os.MkdirTemp(filepath.Dir(sock), ".admin-*")
	if err != nil {
		return fmt.Errorf("embedded store: admin socket: %w", err)
	}
	defer os.RemoveAll(tmp)
	ln, err := net.Listen("unix", filepath.Join(tmp, "s"))
	if err != nil {
		return fmt.Errorf("embedded store: admin socket %s: %w", sock, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // stopAdmin removes it
	err = os.Chmod(filepath.Join(tmp, "s"), 0o600)
	if err == nil {
		err = os.Rename(filepath.Join(tmp, "s"), sock)
	}
	if err != nil {
		ln.Close()
		return fmt.Errorf("embedded store: admin socket %s: %w", sock, err)
	}
	mux := http.NewServeMux()
	s.adminRoutes(mux)      // admin.go: read-only inspection
	s.adminWriteRoutes(mux) // adminwrite.go: changes to the queue
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if _, err := s.Backup(w); err != nil {
			// The status line is gone with the first byte: a broken
			// copy shows as a short body, which the client checks.
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	s.stopAdmin = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		os.Remove(sock)
	}
	return nil
}

// FetchBackup copies the store held by another process, through its admin
// socket, to w. A copy cut short shows only in its content: the caller
// checks the written file with CheckFile.
func FetchBackup(ctx context.Context, storePath string, w io.Writer) (int64, error) {
	sock := SocketPath(storePath)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://store/backup", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("backup through %s (is odek-bot running on this store?): %w", sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, fmt.Errorf("backup through %s: %s: %s", sock, resp.Status, msg)
	}
	return io.Copy(w, resp.Body)
}

// CheckFile opens a store file read-only (without its lock: a backup copy
// is nobody's) and runs bbolt's consistency check over every page.
func CheckFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drained: the checker stops when read to the end
			if first == nil {
				first = fmt.Errorf("check %s: %w", path, err)
			}
		}
		if first != nil {
			return first
		}
		if tx.Bucket(bMeta) == nil || tx.Bucket(bJobs) == nil {
			return fmt.Errorf("check %s: not an odek store (no meta or jobs bucket)", path)
		}
		return nil
	})
}

// Copy writes a consistent copy of the store at storePath to w: through
// the holder's admin socket when a process holds it, else from the file
// itself, read-only and under the store's lock (so no bot starts on it
// meanwhile, and nothing in it changes: no reclaim as Open would do).
func Copy(ctx context.Context, storePath string, w io.Writer) (int64, error) {
	lk, err := lockFile(storePath+".lock", storePath)
	if errors.Is(err, ErrLocked) {
		return FetchBackup(ctx, storePath, w)
	}
	if err != nil {
		return 0, err
	}
	defer lk.Close()
	if _, err := os.Stat(storePath); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	db, err := bolt.Open(storePath, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, fmt.Errorf("backup: open %s: %w", storePath, err)
	}
	defer db.Close()
	var n int64
	err = db.View(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
