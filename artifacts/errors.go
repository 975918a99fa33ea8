package artifacts

import (
	"errors"
	"fmt"
)

// Sentinel errors. A *RefError wraps exactly one of the ref sentinels; match
// them with errors.Is.
var (
	// ErrMalformedEnvelope: text that claims the odek.tool-result/v1 schema
	// is not valid JSON or has a field of the wrong type.
	ErrMalformedEnvelope = errors.New("artifacts: malformed odek.tool-result/v1 envelope")
	// ErrTooManyRefs: the envelope carries more refs than Validator.MaxRefs.
	ErrTooManyRefs = errors.New("artifacts: too many artifact refs")

	// ErrBadSchema: a ref's schema is not exactly odek.artifact-ref/v1.
	ErrBadSchema = errors.New("artifacts: artifact ref schema is not odek.artifact-ref/v1")
	// ErrMissingField: a required ref field (id, uri, media_type) is empty.
	ErrMissingField = errors.New("artifacts: artifact ref field missing")
	// ErrBadID: the id is too long, not UTF-8 or contains control characters.
	ErrBadID = errors.New("artifacts: invalid artifact ref id")
	// ErrDuplicateID: two refs in one envelope share an id.
	ErrDuplicateID = errors.New("artifacts: duplicate artifact ref id")
	// ErrBadMediaType: media_type does not parse as a MIME type.
	ErrBadMediaType = errors.New("artifacts: invalid artifact media_type")
	// ErrBadHash: sha256 is not exactly 64 lowercase hex digits.
	ErrBadHash = errors.New("artifacts: sha256 is not 64 lowercase hex digits")
	// ErrBadSize: size_bytes is negative.
	ErrBadSize = errors.New("artifacts: size_bytes is negative")
	// ErrBadURI: the uri is not an acceptable file:// URI with an absolute,
	// clean path.
	ErrBadURI = errors.New("artifacts: invalid artifact uri")
	// ErrNoRoots: no artifact root is configured or none of them exists, so
	// every ref is rejected.
	ErrNoRoots = errors.New("artifacts: no artifact roots configured")
	// ErrOutsideRoots: the resolved path lies outside every artifact root.
	ErrOutsideRoots = errors.New("artifacts: artifact path outside the artifact roots")
	// ErrNotFound: the artifact file (or a directory on its path) does not
	// exist or cannot be accessed.
	ErrNotFound = errors.New("artifacts: artifact file not found")
	// ErrNotRegular: the artifact is not a regular file.
	ErrNotRegular = errors.New("artifacts: artifact is not a regular file")
	// ErrTooLarge: the artifact is larger than Validator.MaxArtifactBytes.
	ErrTooLarge = errors.New("artifacts: artifact larger than the size cap")
	// ErrSizeMismatch: size_bytes differs from the file's size, or the file
	// changed size while it was hashed.
	ErrSizeMismatch = errors.New("artifacts: artifact size mismatch")
	// ErrHashMismatch: the file's SHA-256 differs from sha256.
	ErrHashMismatch = errors.New("artifacts: artifact sha256 mismatch")
	// ErrChanged: the file opened is not the file that was resolved (it was
	// replaced between the checks and the open).
	ErrChanged = errors.New("artifacts: artifact replaced during validation")
)

// RefError reports why one artifact ref was rejected. Its text names the
// ref's position and id and the reason, never the artifact's path, so it is
// safe to show to the model and to put in events.
type RefError struct {
	// Index is the ref's 0-based position in the envelope's artifacts.
	Index int
	// ID is the ref's id, sanitised for display (control characters
	// removed, at most MaxIDChars characters); empty when the ref has none.
	ID string
	// Reason says what was wrong, in words, with the observed and expected
	// values where they are not secret (sizes, limits, hash prefixes).
	Reason string
	// Err is the sentinel for the class of failure (ErrOutsideRoots, ...).
	Err error

	cause error // underlying I/O error, if any; kept out of Error()
}

// Error returns e.g. `artifacts: artifact ref #0 "report-1": path resolves
// outside every artifact root`.
func (e *RefError) Error() string {
	return fmt.Sprintf("artifacts: artifact ref #%d %q: %s", e.Index, e.ID, e.Reason)
}

// Unwrap returns the sentinel and, when there is one, the underlying I/O
// error (for example an *fs.PathError), so errors.Is matches both.
func (e *RefError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Err, e.cause}
	}
	return []error{e.Err}
}
