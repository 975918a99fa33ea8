// Package artifactstore keeps the artifacts of one run that the model may
// read by id, and provides the `artifact_read` tool that reads them in
// bounded pages.
//
// Artifacts arrive already validated (artifacts.Validator): sub-agent
// results registered by delegate_tasks, and odek.tool-result/v1 envelopes
// of MCP servers registered by the extension host. The model only ever
// names an id; the path stays inside the Store and never reaches the
// model's context, events or errors.
//
// Reading fails closed: the file is opened without following symlinks and
// must still be a regular file of the size measured at validation and the
// very file (device and inode) registered, so an artifact swapped,
// truncated, or reached through a directory replaced by a symlink after
// registration is refused rather than read.
//
// Concurrency and ownership: a *Store is safe for concurrent use; it holds
// refs (not open files) and the files stay owned by whoever wrote them.
package artifactstore

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/odekrun/odek/artifacts"
)

// Errors of the store; match with errors.Is.
var (
	// ErrUnknownID is wrapped when no artifact has the requested id.
	ErrUnknownID = errors.New("artifactstore: unknown artifact id")
	// ErrDuplicateID is wrapped when Register meets an id already taken
	// by a different file.
	ErrDuplicateID = errors.New("artifactstore: artifact id already registered")
	// ErrChanged is wrapped when the file no longer matches what was
	// validated (size, type).
	ErrChanged = errors.New("artifactstore: artifact changed since validation")
	// ErrFull is wrapped when the store holds MaxArtifacts refs.
	ErrFull = errors.New("artifactstore: too many artifacts")
)

// MaxArtifacts bounds the refs one store holds.
const MaxArtifacts = 4096

// Store maps artifact ids to validated refs. The zero value is ready.
type Store struct {
	mu   sync.RWMutex
	refs map[string]artifacts.Ref
	// files holds each ref's file identity taken at Register; Read
	// refuses a file that is not that one (replaced, or reached through a
	// directory swapped for a symlink).
	files map[string]os.FileInfo
}

// Register makes ref readable under ref.ID and records the identity of
// its file, which must still be the validated regular file (ErrChanged
// otherwise). Registering the same id again
// for the same file (path, size and hash) is a no-op; a different file
// under a taken id is ErrDuplicateID (callers namespace ids, e.g.
// "<task_id>/<name>" or "<server>/<id>").
func (s *Store) Register(ref artifacts.Ref) error {
	if ref.ID == "" || ref.Path == "" {
		return fmt.Errorf("artifactstore: ref needs an id and a validated path (got id %q)", ref.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == nil {
		s.refs = make(map[string]artifacts.Ref)
	}
	if old, ok := s.refs[ref.ID]; ok {
		if old.Path == ref.Path && old.SizeBytes == ref.SizeBytes && old.SHA256 == ref.SHA256 {
			return nil
		}
		return fmt.Errorf("%w: %q", ErrDuplicateID, ref.ID)
	}
	if len(s.refs) >= MaxArtifacts {
		return fmt.Errorf("%w: limit %d", ErrFull, MaxArtifacts)
	}
	fi, err := identity(ref)
	if err != nil {
		return fmt.Errorf("%w: artifact %q: %v", ErrChanged, ref.ID, err)
	}
	if s.files == nil {
		s.files = make(map[string]os.FileInfo)
	}
	s.refs[ref.ID] = ref
	s.files[ref.ID] = fi
	return nil
}

// identity stats the validated file (no symlink followed) and checks it
// is still a regular file of the validated size and, when the ref carries
// the identity of the descriptor it was validated through
// (artifacts.Ref.FileInfo), the same file: a file swapped in between
// validation and registration is not registered.
func identity(ref artifacts.Ref) (os.FileInfo, error) {
	f, err := artifacts.OpenNoFollow(ref.Path)
	if err != nil {
		return nil, errors.New("cannot be opened")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != ref.SizeBytes || ref.FileInfo() != nil && !os.SameFile(fi, ref.FileInfo()) {
		return nil, fmt.Errorf("is no longer the %d-byte regular file that was validated", ref.SizeBytes)
	}
	return fi, nil
}

// Lookup returns the ref registered under id.
func (s *Store) Lookup(id string) (artifacts.Ref, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.refs[id]
	return r, ok
}

// IDs returns the registered ids, sorted.
func (s *Store) IDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.refs))
	for id := range s.refs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// unknownIDError names the id and lists up to 50 known ids.
func (s *Store) unknownIDError(id string) error {
	ids := s.IDs()
	if len(ids) == 0 {
		return fmt.Errorf("%w %q: no artifacts are registered in this run", ErrUnknownID, id)
	}
	shown := ids
	if len(shown) > 50 {
		shown = shown[:50]
	}
	q := make([]string, len(shown))
	for i, k := range shown {
		q[i] = strconv.Quote(k)
	}
	more := ""
	if len(ids) > len(shown) {
		more = fmt.Sprintf(" (and %d more)", len(ids)-len(shown))
	}
	return fmt.Errorf("%w %q; known ids: %s%s", ErrUnknownID, id, strings.Join(q, ", "), more)
}
