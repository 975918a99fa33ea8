package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Default limits of a zero Validator.
const (
	// DefaultMaxRefs is the most refs one envelope may carry.
	DefaultMaxRefs = 64
	// DefaultMaxArtifactBytes is the largest artifact accepted (1 GiB); it
	// also bounds the bytes hashed per ref.
	DefaultMaxArtifactBytes int64 = 1 << 30
)

// Ref is an artifact ref that passed validation.
type Ref struct {
	// ID, MediaType and Summary are as the server sent them (ID and
	// MediaType checked, Summary unchecked: it is sanitised on display).
	ID, MediaType, Summary string
	// URI is the ref's uri as sent.
	URI string
	// Path is the artifact's resolved absolute path (symlinks evaluated),
	// inside Root. It is for odek's own use (artifact_read) and must never
	// be shown to the model.
	Path string
	// Root is the resolved artifact root that contains Path.
	Root string
	// SizeBytes is the file's size measured at validation.
	SizeBytes int64
	// SHA256 is the verified lowercase hex digest, or "" when the server
	// gave none (odek does not hash unasked).
	SHA256 string

	info fs.FileInfo // see FileInfo
}

// Validator checks artifact refs against the operator's artifact roots.
// The zero value rejects every ref (no roots). It is safe for concurrent
// use and is not modified by Validate.
type Validator struct {
	// Roots are the directories under which artifacts are accepted
	// (artifact_roots). They must be absolute; each is resolved with
	// filepath.EvalSymlinks on every Validate call, and a root that is
	// relative or does not resolve to a directory is ignored. Empty (or none
	// usable) ⇒ every ref is rejected with ErrNoRoots.
	Roots []string
	// MaxRefs is the most refs one envelope may carry; 0 means
	// DefaultMaxRefs, negative means none allowed.
	MaxRefs int
	// MaxArtifactBytes is the largest artifact accepted, in bytes; 0 means
	// DefaultMaxArtifactBytes. It bounds hashing time and I/O per ref.
	MaxArtifactBytes int64
}

// RefLimit is the most refs one result may carry under v (MaxRefs with its
// default applied).
func (v *Validator) RefLimit() int { return v.maxRefs() }

func (v *Validator) maxRefs() int {
	switch {
	case v.MaxRefs == 0:
		return DefaultMaxRefs
	case v.MaxRefs < 0:
		return 0
	}
	return v.MaxRefs
}

func (v *Validator) maxBytes() int64 {
	if v.MaxArtifactBytes <= 0 {
		return DefaultMaxArtifactBytes
	}
	return v.MaxArtifactBytes
}

// resolveRoots returns the usable roots, resolved and cleaned.
func (v *Validator) resolveRoots() []string {
	roots := make([]string, 0, len(v.Roots))
	for _, r := range v.Roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		res, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(res); err != nil || !fi.IsDir() {
			continue
		}
		roots = append(roots, filepath.Clean(res))
	}
	return roots
}

// Validate checks every ref (see the package documentation for the rules
// and their order) and returns the validated refs in order. It stops at the
// first violation and returns a *RefError for it, or an error wrapping
// ErrTooManyRefs before looking at any ref. No refs ⇒ (nil, nil), roots or
// not.
func (v *Validator) Validate(specs []RefSpec) ([]Ref, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if max := v.maxRefs(); len(specs) > max {
		return nil, fmt.Errorf("%w: envelope carries %d refs, limit %d", ErrTooManyRefs, len(specs), max)
	}
	// Static checks of every ref first: a malformed envelope fails before
	// any file is touched.
	seen := make(map[string]int, len(specs))
	for i := range specs {
		if err := checkSpec(i, &specs[i]); err != nil {
			return nil, err
		}
		if j, dup := seen[specs[i].ID]; dup {
			return nil, refErr(i, specs[i].ID, ErrDuplicateID, nil, "id already used by ref #%d", j)
		}
		seen[specs[i].ID] = i
	}
	roots := v.resolveRoots()
	refs := make([]Ref, len(specs))
	for i := range specs {
		r, err := v.checkFile(i, &specs[i], roots)
		if err != nil {
			return nil, err
		}
		refs[i] = r
	}
	return refs, nil
}

// checkSpec performs the checks that need no file system. Pure.
func checkSpec(i int, s *RefSpec) error {
	switch {
	case s.Schema != RefSchema:
		return refErr(i, s.ID, ErrBadSchema, nil, "schema %q, want %q", clip(sanitizeLine(s.Schema), 64), RefSchema)
	case s.ID == "":
		return refErr(i, "", ErrMissingField, nil, "id is missing")
	case s.URI == "":
		return refErr(i, s.ID, ErrMissingField, nil, "uri is missing")
	case s.MediaType == "":
		return refErr(i, s.ID, ErrMissingField, nil, "media_type is missing")
	}
	if n := utf8.RuneCountInString(s.ID); n > MaxIDChars {
		return refErr(i, s.ID, ErrBadID, nil, "id is %d characters, limit %d", n, MaxIDChars)
	}
	if !utf8.ValidString(s.ID) || strings.IndexFunc(s.ID, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp)
	}) >= 0 {
		return refErr(i, s.ID, ErrBadID, nil, "id contains invalid UTF-8 or control characters")
	}
	if len(s.MediaType) > MaxMediaTypeChars {
		return refErr(i, s.ID, ErrBadMediaType, nil, "media_type is %d bytes, limit %d", len(s.MediaType), MaxMediaTypeChars)
	}
	if _, _, err := mime.ParseMediaType(s.MediaType); err != nil {
		return refErr(i, s.ID, ErrBadMediaType, nil, "media_type %q does not parse", clip(sanitizeLine(s.MediaType), 64))
	}
	if s.SHA256 != "" && !isLowerHex64(s.SHA256) {
		return refErr(i, s.ID, ErrBadHash, nil, "sha256 must be 64 lowercase hex digits (got %d characters)", len(s.SHA256))
	}
	if s.SizeBytes != nil && *s.SizeBytes < 0 {
		return refErr(i, s.ID, ErrBadSize, nil, "size_bytes is %d", *s.SizeBytes)
	}
	return nil
}

func isLowerHex64(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkFile resolves and verifies the file of one statically valid ref.
func (v *Validator) checkFile(i int, s *RefSpec, roots []string) (Ref, error) {
	p, err := ParseFileURI(s.URI)
	if err != nil {
		return Ref{}, refErr(i, s.ID, ErrBadURI, nil, "%s", strings.TrimPrefix(err.Error(), ErrBadURI.Error()+": "))
	}
	if len(roots) == 0 {
		if len(v.Roots) == 0 {
			return Ref{}, refErr(i, s.ID, ErrNoRoots, nil, "no artifact_roots configured for this server, so every artifact ref is rejected")
		}
		return Ref{}, refErr(i, s.ID, ErrNoRoots, nil, "none of the %d configured artifact_roots is an existing absolute directory", len(v.Roots))
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Ref{}, refErr(i, s.ID, ErrNotFound, err, "file does not exist")
		}
		return Ref{}, refErr(i, s.ID, ErrNotFound, err, "path cannot be resolved")
	}
	root := ""
	for _, r := range roots {
		if within(r, resolved) {
			root = r
			break
		}
	}
	if root == "" {
		if resolved != p {
			return Ref{}, refErr(i, s.ID, ErrOutsideRoots, nil, "path resolves through a symbolic link to outside every artifact root")
		}
		return Ref{}, refErr(i, s.ID, ErrOutsideRoots, nil, "path is outside every artifact root")
	}
	// From here on the file is examined through one descriptor, opened
	// beneath the root (an os.Root: a link swapped in on the way cannot
	// lead out of it) without blocking on a FIFO; its type, size and hash
	// are those of that descriptor, and the ref carries its identity so
	// that later readers (artifact_read) can check they read the same file.
	rel, err := filepath.Rel(root, resolved)
	if err != nil {
		return Ref{}, refErr(i, s.ID, ErrOutsideRoots, nil, "path is outside every artifact root")
	}
	f, err := openBeneath(root, rel)
	if err != nil {
		if errors.Is(err, ErrChanged) {
			return Ref{}, refErr(i, s.ID, ErrChanged, nil, "file was replaced while it was validated")
		}
		return Ref{}, refErr(i, s.ID, ErrNotFound, err, "file cannot be examined")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Ref{}, refErr(i, s.ID, ErrNotFound, err, "file cannot be examined")
	}
	if !fi.Mode().IsRegular() {
		return Ref{}, refErr(i, s.ID, ErrNotRegular, nil, "not a regular file (%s)", modeName(fi.Mode()))
	}
	maxBytes := v.maxBytes()
	if fi.Size() > maxBytes {
		return Ref{}, refErr(i, s.ID, ErrTooLarge, nil, "file is %d bytes, limit %d", fi.Size(), maxBytes)
	}
	if s.SizeBytes != nil && *s.SizeBytes != fi.Size() {
		return Ref{}, refErr(i, s.ID, ErrSizeMismatch, nil, "size_bytes is %d but the file has %d bytes", *s.SizeBytes, fi.Size())
	}
	ref := Ref{
		ID: s.ID, MediaType: s.MediaType, Summary: s.Summary, URI: s.URI,
		Path: resolved, Root: root, SizeBytes: fi.Size(), info: fi,
	}
	if s.SHA256 == "" {
		return ref, nil
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(f, maxBytes+1), make([]byte, 256<<10))
	switch {
	case err != nil:
		return Ref{}, refErr(i, s.ID, ErrNotFound, err, "file cannot be read")
	case n != fi.Size():
		return Ref{}, refErr(i, s.ID, ErrSizeMismatch, nil, "file changed size while it was hashed (%d bytes read, %d expected)", n, fi.Size())
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if sum != s.SHA256 {
		return Ref{}, refErr(i, s.ID, ErrHashMismatch, nil, "sha256 is %s… but the file hashes to %s…", s.SHA256[:ShortHashLen], sum[:ShortHashLen])
	}
	ref.SHA256 = sum
	return ref, nil
}

// FileInfo is the fstat of the descriptor the ref was validated through
// (nil for a Ref not made by Validate). A reader that opens Path later
// checks os.SameFile against it: a file swapped in since is not the one
// validated.
func (r Ref) FileInfo() fs.FileInfo { return r.info }

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

func refErr(i int, id string, sentinel, cause error, format string, args ...any) *RefError {
	return &RefError{
		Index:  i,
		ID:     clip(sanitizeLine(id), MaxIDChars),
		Reason: fmt.Sprintf(format, args...),
		Err:    sentinel,
		cause:  cause,
	}
}
