package subagent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/beneath"
	"github.com/odekrun/odek/internal/privdir"
)

// Limits of the artifact channel.
const (
	// MaxArtifactsPerTask bounds the files one child may hand back.
	MaxArtifactsPerTask = 64
	// MaxArtifactBytes bounds one artifact.
	MaxArtifactBytes = artifacts.DefaultMaxArtifactBytes
	// MaxTaskArtifactBytes bounds all the artifacts of one task together
	// (they are copied out of the workspace, so this bounds the disk one
	// task can fill outside it).
	MaxTaskArtifactBytes = artifacts.DefaultMaxArtifactBytes
	// maxStageEntries bounds the directory entries looked at in a staging
	// directory.
	maxStageEntries = 10_000
)

// ErrArtifacts is wrapped by errors of the artifact channel.
var ErrArtifacts = errors.New("subagent: artifacts")

// prepareStage creates an empty 0700 staging directory at
// workDir/StageDir/name and returns its workspace-relative path. The
// workspace may be written by a confined chat while this runs: every
// component is made and opened relative to the workspace's descriptor with
// no symbolic link followed (package beneath), so a link planted anywhere
// on the way is refused, never followed; leftovers of an earlier run are
// removed the same way.
func prepareStage(workDir, name string) (string, error) {
	ws, err := beneath.OpenDir(workDir)
	if err != nil {
		return "", fmt.Errorf("%w: workspace: %v", ErrArtifacts, err)
	}
	defer ws.Close()
	rel := StageDir + "/" + name
	dir, err := ws.MkdirAllOpen(rel, 0o700)
	if err != nil {
		return "", fmt.Errorf("%w: staging directory %s is not a plain directory: %v", ErrArtifacts, rel, err)
	}
	defer dir.Close()
	// Leftovers of an earlier run of the same task are not this run's.
	names, err := dir.Names()
	if err != nil {
		return "", fmt.Errorf("%w: staging directory: %v", ErrArtifacts, err)
	}
	for _, n := range names {
		if err := dir.RemoveAll(n); err != nil {
			return "", fmt.Errorf("%w: clear staging directory: %v", ErrArtifacts, err)
		}
	}
	return rel, nil
}

// CollectArtifacts copies every regular file staged under the
// workspace-relative directory stage of workDir into root (same relative
// path), hashing the bytes as it copies them, and returns one
// odek.artifact-ref/v1 per file, with the relative path (slash-separated)
// as id. The staging directory lives in a workspace a confined chat can
// write, so it is read only through descriptors (package beneath): a
// symbolic link anywhere is refused or skipped, a FIFO or device is
// skipped without blocking, and what is hashed is what was read from the
// descriptor that fstat said is a regular file. Files are copied, never
// renamed, so the artifact shares no inode with a name the chat keeps.
// root must be a directory no chat can write (the parent made it); its
// missing subdirectories are made 0700. The staging directory is removed
// afterwards. The refs of files copied before an error are returned with
// it.
func CollectArtifacts(workDir, stage, root string) ([]artifacts.RefSpec, error) {
	refs := []artifacts.RefSpec{}
	ws, err := beneath.OpenDir(workDir)
	if err != nil {
		return refs, fmt.Errorf("%w: workspace: %v", ErrArtifacts, err)
	}
	defer ws.Close()
	defer func() {
		if parent, err := ws.OpenDir(path.Dir(stage)); err == nil {
			parent.RemoveAll(path.Base(stage))
			parent.Close()
		}
	}()
	sd, err := ws.OpenDir(stage)
	if err != nil {
		return refs, fmt.Errorf("%w: staging directory: %v", ErrArtifacts, err)
	}
	defer sd.Close()
	var files []string
	if err := sd.Walk(maxStageEntries, func(e beneath.Entry) error {
		files = append(files, e.Rel)
		return nil
	}); err != nil {
		return refs, fmt.Errorf("%w: walk staging directory: %v", ErrArtifacts, err)
	}
	if len(files) > MaxArtifactsPerTask {
		return refs, fmt.Errorf("%w: %d files staged, limit %d", ErrArtifacts, len(files), MaxArtifactsPerTask)
	}
	if len(files) == 0 {
		return refs, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return refs, fmt.Errorf("%w: artifact root: %v", ErrArtifacts, err)
	}
	rd, err := beneath.OpenDir(root)
	if err != nil {
		return refs, fmt.Errorf("%w: artifact root: %v", ErrArtifacts, err)
	}
	defer rd.Close()
	var total int64
	for _, id := range files {
		if !printableID(id) {
			return refs, fmt.Errorf("%w: staged file name %q is not a printable id of at most %d characters", ErrArtifacts, id, artifacts.MaxIDChars)
		}
		sum, size, head, err := copyOut(sd, rd, id, MaxTaskArtifactBytes-total)
		if err != nil {
			return refs, fmt.Errorf("%w: copy %q: %v", ErrArtifacts, id, err)
		}
		total += size
		dst := filepath.Join(root, filepath.FromSlash(id))
		refs = append(refs, artifacts.RefSpec{
			Schema:    artifacts.RefSchema,
			ID:        id,
			URI:       (&url.URL{Scheme: "file", Path: filepath.ToSlash(dst)}).String(),
			MediaType: mediaType(dst, head),
			SHA256:    sum,
			SizeBytes: &size,
		})
	}
	return refs, nil
}

func printableID(id string) bool {
	if id == "" || len([]rune(id)) > artifacts.MaxIDChars {
		return false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// copyOut copies the regular file rel of the staging directory sd into a
// new 0600 file of the same relative path in the artifact root rd, with at
// most min(MaxArtifactBytes, budget) bytes, and returns the sha256 and
// size of the bytes written and their first 512 bytes (for media type
// sniffing).
func copyOut(sd, rd *beneath.Dir, rel string, budget int64) (string, int64, []byte, error) {
	limit := min(MaxArtifactBytes, budget)
	in, fi, err := sd.OpenFile(rel)
	if err != nil {
		return "", 0, nil, err
	}
	defer in.Close()
	if fi.Size() > limit {
		return "", 0, nil, fmt.Errorf("%d bytes, limit %d (%d per file, %d per task)", fi.Size(), limit, MaxArtifactBytes, MaxTaskArtifactBytes)
	}
	dir := rd
	if d := path.Dir(rel); d != "." {
		if dir, err = rd.MkdirAllOpen(d, 0o700); err != nil {
			return "", 0, nil, err
		}
		defer dir.Close()
	}
	out, err := dir.Create(path.Base(rel), 0o600)
	if err != nil {
		return "", 0, nil, err
	}
	h := sha256.New()
	hw := &headWriter{max: 512}
	n, err := io.Copy(io.MultiWriter(out, h, hw), io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = fmt.Errorf("grew past %d bytes while it was copied", limit)
	}
	if err != nil {
		return "", 0, nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, hw.b, nil
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	b   []byte
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// mediaType picks the media type from the extension, else by sniffing.
func mediaType(p string, head []byte) string {
	if mt := mime.TypeByExtension(strings.ToLower(filepath.Ext(p))); mt != "" {
		return mt
	}
	return http.DetectContentType(head)
}

// PrivateDirName is the directory under ODEK_HOME that holds the private
// artifact directories of confined runs (PrivateArtifactsDir).
const PrivateDirName = "subagents"

// PrivateArtifactsDir makes a new, empty 0700 directory for the artifact
// roots of a confined run's children and returns its path; the caller
// removes it when the run ends. It lies under home/PrivateDirName:
// ODEK_HOME is never granted to a sandboxed process (host adds it to every
// ruleset's deny list), so no chat can reach it. When home cannot be
// written it falls back to the system temp directory, which the sandbox
// grants no job either (each job has a private temp dir of its own).
func PrivateArtifactsDir(home string) (string, error) {
	if home != "" {
		base := filepath.Join(home, PrivateDirName)
		if err := os.MkdirAll(base, 0o700); err == nil {
			if dir, err := unguessableDir(base, "run-"); err == nil {
				return dir, nil
			}
		}
	}
	dir, err := unguessableDir(os.TempDir(), "odek-subagents-")
	if err != nil {
		return "", fmt.Errorf("subagent: private artifact directory: %w", err)
	}
	return dir, nil
}

// unguessableDir makes a new 0700 directory in parent named prefix and
// 128 random bits (privdir.Make), so another chat's job learns nothing of
// this run's files by naming them.
func unguessableDir(parent, prefix string) (string, error) {
	return privdir.Make(parent, prefix)
}
