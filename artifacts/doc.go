// Package artifacts implements the odek.tool-result/v1 envelope and the
// odek.artifact-ref/v1 reference of the odek-extension/v1 contract: it
// detects an envelope in a tool's text, validates every artifact ref fail
// closed against the operator's artifact roots, and renders what the model
// is allowed to see — the compact text plus one metadata line per artifact,
// cut to max_result_chars with the contract's exact truncation notice. It
// also wraps untrusted tool output in a per-call nonce'd boundary.
//
// # Envelope detection
//
// ParseEnvelope looks at the text of one content item. Text that does not
// start with '{' (after JSON whitespace), or that is a JSON object whose
// "schema" is absent or not exactly "odek.tool-result/v1", is plain text and
// always valid. A JSON object with that schema is decoded strictly by type
// ("text" a string, "artifacts" an array of objects, each ref field of its
// documented type); a type error is ErrMalformedEnvelope. Text that starts
// with '{', is not valid JSON and mentions "odek.tool-result" anywhere is
// also ErrMalformedEnvelope: a server that meant to send an envelope and
// broke it gets an error instead of having its JSON shown as prose. Unknown
// fields are ignored everywhere.
//
// # Artifact-ref validation
//
// Validator.Validate checks, for each ref and in this order: the count
// against MaxRefs; schema exactly "odek.artifact-ref/v1"; id, uri and
// media_type present; id printable and at most MaxIDChars characters and
// unique in the envelope; media_type parseable; sha256, when present,
// exactly 64 lowercase hex digits; size_bytes, when present, not negative.
// Then the file: the URI must be file://, with an empty or "localhost"
// host, no query or fragment, valid percent escapes and no NUL; the decoded
// path must be absolute and clean (no "." or ".." segment, no empty segment,
// no trailing slash). The path and every root are resolved with
// filepath.EvalSymlinks and the resolved file must lie inside a resolved
// root (a path component boundary is required: /data2 is not inside /data).
// The file must be a regular file of at most MaxArtifactBytes; it is opened
// with O_NOFOLLOW|O_NONBLOCK and the open file is checked to be the one
// that was resolved. size_bytes is compared with the real size, and sha256
// with a digest streamed from the open file (never more than the size cap is
// read). With no usable root every ref is rejected (ErrNoRoots).
//
// Every failure is a *RefError naming the ref's index and id and a short
// reason, wrapping one of the Err* sentinels; its text never contains the
// artifact's path, so it can be shown to the model.
//
// # What the model sees
//
// Render and Compose produce the model-facing text. Every line that odek
// itself adds starts with "[odek": the artifact metadata lines
//
//	[odek artifact] id="report-1" media_type="application/xml" size_bytes=21453211 sha256=9f2c1a2b3c4d summary="Full CI test results"
//
// the truncation notice, and (in mcpclient) the one-line summaries of
// non-text content. Server-supplied text can never contain that marker:
// Neutralize rewrites every "[odek" in it (the letters in any case) to
// "[~odek", so no line a server writes can pass for one of odek's. Values
// from the server inside a metadata line (id, media type, summary) are
// neutralised, stripped of control characters, capped in length and quoted
// Go-style, so they cannot end the line or the quoted value. Paths and
// content are never rendered; the short hash is the first 12 hex digits of
// the verified sha256 and is omitted when the server gave none.
//
// Truncate is a pure function: when the rendered text exceeds the limit
// (counted in Unicode code points) it keeps the metadata lines, adds the
// contract's notice, and cuts the text so the total stays within the limit.
//
// # Untrusted content
//
// WrapUntrusted puts tool output between an opening and a closing marker
// that both carry a 128-bit random nonce from crypto/rand, and states that
// the content is data, not instructions. The wrapped text cannot close the
// boundary: it cannot guess the nonce, and any "odek-untrusted" in it (any
// letter case) is rewritten to "odek~untrusted" so it cannot even imitate a
// marker.
//
// # Concurrency and ownership
//
// All functions are safe for concurrent use; a Validator is read-only after
// construction and may be shared. Results never alias their inputs' backing
// arrays in a way the caller must care about: strings are immutable and
// slices returned are freshly allocated.
package artifacts
