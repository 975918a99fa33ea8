package subagent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/odekrun/odek/artifacts"
)

// Limits of the artifact channel.
const (
	// MaxArtifactsPerTask bounds the files one child may hand back.
	MaxArtifactsPerTask = 64
	// MaxArtifactBytes bounds one artifact.
	MaxArtifactBytes = artifacts.DefaultMaxArtifactBytes
)

// ErrArtifacts is wrapped by errors of the artifact channel.
var ErrArtifacts = errors.New("subagent: artifacts")

// prepareStage creates an empty 0700 staging directory at
// workDir/StageDir/name. Every directory on the way below workDir must be a
// real directory, not a symlink: a repository cannot redirect staging (and
// the clean-up of a previous run's leftovers) somewhere else.
func prepareStage(workDir, name string) (string, error) {
	dir := workDir
	for _, part := range append(strings.Split(StageDir, "/"), name) {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0 || err == nil && !fi.IsDir():
			return "", fmt.Errorf("%w: staging path component %q is not a plain directory", ErrArtifacts, part)
		case errors.Is(err, fs.ErrNotExist):
			err := os.Mkdir(dir, 0o700)
			if errors.Is(err, fs.ErrExist) {
				// A sibling child (same work directory, started at the same
				// moment) made it first: accept it only if it is a plain
				// directory too.
				fi, err = os.Lstat(dir)
				if err == nil && (fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir()) {
					return "", fmt.Errorf("%w: staging path component %q is not a plain directory", ErrArtifacts, part)
				}
			}
			if err != nil {
				return "", fmt.Errorf("%w: create staging directory: %v", ErrArtifacts, err)
			}
		case err != nil:
			return "", fmt.Errorf("%w: staging directory: %v", ErrArtifacts, err)
		}
	}
	// Leftovers of an earlier run of the same task are not this run's.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("%w: staging directory: %v", ErrArtifacts, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return "", fmt.Errorf("%w: clear staging directory: %v", ErrArtifacts, err)
		}
	}
	return dir, nil
}

// CollectArtifacts moves every regular file staged under stage into root
// (same relative path), measures its sha256 and size from the moved file,
// and returns one odek.artifact-ref/v1 per file, with the relative path
// (slash-separated) as id. Symlinks and other non-regular entries are
// skipped, never followed. The staging directory is removed afterwards.
// The refs of files moved before an error are returned with it.
func CollectArtifacts(stage, root string) ([]artifacts.RefSpec, error) {
	defer os.RemoveAll(stage)
	refs := []artifacts.RefSpec{}
	var files []string
	err := filepath.WalkDir(stage, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return refs, fmt.Errorf("%w: walk staging directory: %v", ErrArtifacts, err)
	}
	if len(files) > MaxArtifactsPerTask {
		return refs, fmt.Errorf("%w: %d files staged, limit %d", ErrArtifacts, len(files), MaxArtifactsPerTask)
	}
	if len(files) > 0 {
		if err := os.MkdirAll(root, 0o700); err != nil {
			return refs, fmt.Errorf("%w: artifact root: %v", ErrArtifacts, err)
		}
	}
	for _, src := range files {
		rel, err := filepath.Rel(stage, src)
		if err != nil {
			return refs, fmt.Errorf("%w: %v", ErrArtifacts, err)
		}
		id := filepath.ToSlash(rel)
		if !printableID(id) {
			return refs, fmt.Errorf("%w: staged file name %q is not a printable id of at most %d characters", ErrArtifacts, id, artifacts.MaxIDChars)
		}
		dst := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return refs, fmt.Errorf("%w: %v", ErrArtifacts, err)
		}
		if err := move(src, dst); err != nil {
			return refs, fmt.Errorf("%w: move %q: %v", ErrArtifacts, id, err)
		}
		sum, size, head, err := measure(dst)
		if err != nil {
			return refs, fmt.Errorf("%w: measure %q: %v", ErrArtifacts, id, err)
		}
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

// move renames src to dst, copying when they are on different file
// systems or when src has other hard links: renaming a linked file would
// make the artifact share its inode with a file outside the staging
// directory (a later write there would change the validated artifact, and
// the chmod to 0600 would change that file's mode). The destination is
// created 0600 and never written through a symlink; a src that is not a
// regular file (swapped after the walk) is refused.
func move(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (mode %v)", fi.Mode().Type())
	}
	if linkCount(fi) == 1 {
		if err := os.Rename(src, dst); err == nil {
			return os.Chmod(dst, 0o600)
		}
	}
	in, err := artifacts.OpenNoFollow(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: never through a symlink
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, MaxArtifactBytes+1)); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Remove(src)
}

// measure hashes the file at p, returning the digest, the size and its
// first 512 bytes (for media type sniffing).
func measure(p string) (string, int64, []byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxArtifactBytes {
		return "", 0, nil, fmt.Errorf("not a regular file of at most %d bytes (size %d)", MaxArtifactBytes, fi.Size())
	}
	h := sha256.New()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	h.Write(head)
	rest, err := io.Copy(h, f)
	if err != nil {
		return "", 0, nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), int64(n) + rest, head, nil
}

// mediaType picks the media type from the extension, else by sniffing.
func mediaType(p string, head []byte) string {
	if mt := mime.TypeByExtension(strings.ToLower(filepath.Ext(p))); mt != "" {
		return mt
	}
	return http.DetectContentType(head)
}
