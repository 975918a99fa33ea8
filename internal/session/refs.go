package session

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the external-state-ref schema (EXTENSIONS.md), in characters
// (Unicode code points).
const (
	MaxRefKindChars      = 64
	MaxRefURIChars       = 2048
	MaxRefCreatedByChars = 128
	// MaxRefSpecBytes bounds the input of ParseExternalRef, in bytes (room
	// for the longest valid fields in 4-byte UTF-8).
	MaxRefSpecBytes = 16 << 10
)

// ErrInvalidRef is wrapped by every *RefError.
var ErrInvalidRef = errors.New("session: invalid external ref")

// RefError is a malformed or invalid external ref. Field names the offending
// field (kind, uri, created_by, read_only, created_at) or is empty when the
// input as a whole is malformed.
type RefError struct {
	Field  string
	Reason string
}

func (e *RefError) Error() string {
	if e.Field == "" {
		return "session: invalid external ref: " + e.Reason
	}
	return fmt.Sprintf("session: invalid external ref: field %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidRef) true.
func (e *RefError) Unwrap() error { return ErrInvalidRef }

// ExternalRef points at state that lives outside odek (a CI run, a
// dashboard, an object). odek stores and transports refs but never
// dereferences them.
type ExternalRef struct {
	// Kind is 1–64 characters of [a-z0-9_-].
	Kind string `json:"kind"`
	// URI is 1–2048 characters without control characters; never fetched.
	URI string `json:"uri"`
	// CreatedBy names who attached the ref, 1–128 characters.
	CreatedBy string `json:"created_by"`
	// ReadOnly tells the model the referenced state must not be changed.
	ReadOnly bool `json:"read_only"`
	// CreatedAt is stamped by MergeRefs when zero.
	CreatedAt time.Time `json:"created_at"`
}

// Validate checks the schema limits. Text fields must be valid UTF-8 and,
// for uri and created_by, free of control characters (created_by's rule is
// stricter than the schema's, since it is shown to people).
func (r ExternalRef) Validate() error {
	if err := checkText("kind", r.Kind, MaxRefKindChars); err != nil {
		return err
	}
	for _, c := range r.Kind {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return &RefError{Field: "kind", Reason: fmt.Sprintf("character %q is not one of [a-z0-9_-]", c)}
		}
	}
	if err := checkText("uri", r.URI, MaxRefURIChars); err != nil {
		return err
	}
	return checkText("created_by", r.CreatedBy, MaxRefCreatedByChars)
}

func checkText(field, v string, maxChars int) error {
	if v == "" {
		return &RefError{Field: field, Reason: "empty"}
	}
	if !utf8.ValidString(v) {
		return &RefError{Field: field, Reason: "not valid UTF-8"}
	}
	if n := utf8.RuneCountInString(v); n > maxChars {
		return &RefError{Field: field, Reason: fmt.Sprintf("%d characters, exceeding the limit %d", n, maxChars)}
	}
	for i, c := range v {
		if unicode.IsControl(c) {
			return &RefError{Field: field, Reason: fmt.Sprintf("control character %U at byte %d", c, i)}
		}
	}
	return nil
}

var refFields = []string{"kind", "uri", "created_by", "read_only", "created_at"}

// fieldOf returns the known field a segment "name=value" starts, or "".
func fieldOf(seg string) string {
	name, _, ok := strings.Cut(seg, "=")
	if !ok {
		return ""
	}
	for _, f := range refFields {
		if name == f {
			return f
		}
	}
	return ""
}

// ParseExternalRef parses the CLI form
// "kind=...,uri=...,created_by=...[,read_only=true|false][,created_at=RFC3339]"
// and validates the result. Fields may come in any order, each at most once.
// A URI may contain commas: a segment that does not start with a known
// field name and '=' continues the uri value (and is an error after any
// other field). Errors are *RefError naming the field.
func ParseExternalRef(s string) (ExternalRef, error) {
	var r ExternalRef
	if len(s) > MaxRefSpecBytes {
		return r, &RefError{Reason: fmt.Sprintf("%d bytes, exceeding the limit %d", len(s), MaxRefSpecBytes)}
	}
	if s == "" {
		return r, &RefError{Reason: "empty; want kind=...,uri=...,created_by=..."}
	}
	vals := map[string]string{}
	last := ""
	for seg := range strings.SplitSeq(s, ",") {
		f := fieldOf(seg)
		if f == "" {
			if last == "uri" {
				vals["uri"] += "," + seg
				continue
			}
			name, _, ok := strings.Cut(seg, "=")
			if !ok {
				return r, &RefError{Reason: fmt.Sprintf("segment %q is not name=value", clip(seg))}
			}
			return r, &RefError{Field: clip(name), Reason: "unknown field; want kind, uri, created_by, read_only or created_at"}
		}
		if _, dup := vals[f]; dup {
			return r, &RefError{Field: f, Reason: "given more than once"}
		}
		vals[f] = seg[len(f)+1:]
		last = f
	}
	for _, f := range []string{"kind", "uri", "created_by"} {
		if _, ok := vals[f]; !ok {
			return r, &RefError{Field: f, Reason: "missing"}
		}
	}
	r.Kind, r.URI, r.CreatedBy = vals["kind"], vals["uri"], vals["created_by"]
	if v, ok := vals["read_only"]; ok {
		switch v {
		case "true":
			r.ReadOnly = true
		case "false":
		default:
			return r, &RefError{Field: "read_only", Reason: fmt.Sprintf("got %q, want true or false", clip(v))}
		}
	}
	if v, ok := vals["created_at"]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return r, &RefError{Field: "created_at", Reason: fmt.Sprintf("got %q, want an RFC 3339 time", clip(v))}
		}
		r.CreatedAt = t
	}
	if err := r.Validate(); err != nil {
		return ExternalRef{}, err
	}
	return r, nil
}

// clip keeps error messages short and printable.
func clip(s string) string {
	const n = 64
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

type refKey struct{ kind, uri, createdBy string }

// MergeRefs returns existing followed by the refs of add that are new,
// deduplicated on (kind, uri, created_by) — the first occurrence wins, so an
// existing ref keeps its created_at and read_only. Zero CreatedAt values are
// stamped with now (UTC). The inputs are not modified.
func MergeRefs(existing, add []ExternalRef, now time.Time) []ExternalRef {
	out := make([]ExternalRef, 0, len(existing)+len(add))
	seen := make(map[refKey]bool, len(existing)+len(add))
	for _, list := range [][]ExternalRef{existing, add} {
		for _, r := range list {
			k := refKey{r.Kind, r.URI, r.CreatedBy}
			if seen[k] {
				continue
			}
			seen[k] = true
			if r.CreatedAt.IsZero() {
				r.CreatedAt = now.UTC()
			}
			out = append(out, r)
		}
	}
	return out
}
