// Package redact masks secrets in text before it reaches events, logs, tool
// results shown to the model, or any other output odek does not fully
// control.
//
// Two mechanisms work together:
//
//   - Known values. Every secret odek holds (the API key, the bot token,
//     the values of secret-named environment variables) is registered with
//     AddValue or AddFromEnv and masked wherever it occurs, also in its
//     common encodings (JSON string escaping, URL escaping, unpadded
//     standard and URL-safe base64 of the value on its own).
//   - Patterns for credentials odek does not know, listed in detect.go:
//     provider key formats (OpenAI, Anthropic, GitHub, Slack, AWS, Google,
//     Telegram), bearer tokens, PEM private key blocks, passwords in URLs
//     and the values of secret-named keys in KEY=value, KEY: value and JSON
//     "key": "value" pairs.
//
// Every masked range is replaced by Marker; the names around it (the key of
// a pair, the user of a URL, the "Bearer" keyword) are kept so the text
// stays readable. Redaction is idempotent: String(String(x)) == String(x).
// It is conservative: it may mask things that are not secrets (the value
// of "token: ..." in prose or source code) rather than let one through.
//
// Ownership and concurrency: a Redactor is safe for concurrent use;
// AddValue may run while other goroutines redact (they see the value from
// their next call on). The nil *Redactor is valid and masks by pattern
// only. A Stream belongs to one goroutine.
//
// Cost: text without secrets is scanned with a handful of SIMD substring
// searches and returned without allocating; see BenchmarkString.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Marker replaces every masked range. It names no kind of credential, so a
// redacted text does not tell which provider a leaked key belonged to.
const Marker = "[REDACTED]"

// MinValueLen is the shortest registered value that is masked, in bytes.
// Shorter values ("1", "true", "admin") would mask ordinary words all over
// the text; they are ignored by AddValue.
const MinValueLen = 8

// Redactor masks registered secret values and credential patterns. The
// zero value and the nil pointer are ready to use; neither knows any value.
type Redactor struct {
	mu   sync.Mutex // serialises writers of vals
	vals atomic.Pointer[valueSet]
	// raw holds the registered values (not their encodings), so a rebuild
	// can derive everything again; guarded by mu.
	raw map[string]struct{}
}

// New returns a Redactor that knows no values yet.
func New() *Redactor { return &Redactor{} }

// AddValue registers a secret value: from now on it and its encodings are
// masked wherever they occur. Values shorter than MinValueLen bytes and
// values of only white space are ignored. A value that overlaps Marker
// itself (it starts with "]" or "D]", ends with "[", contains "[REDACTED]",
// …) is registered without the overlapping part, so that redacting twice
// changes nothing. Calling AddValue on a nil Redactor does nothing.
func (r *Redactor) AddValue(secret string) {
	if r == nil {
		return
	}
	r.add([]string{secret})
}

// AddFromEnv registers the value of every NAME=value entry (the format of
// os.Environ) whose NAME satisfies IsSecretName, with the same rules as
// AddValue.
func (r *Redactor) AddFromEnv(environ []string) {
	if r == nil {
		return
	}
	var vals []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if ok && IsSecretName(name) {
			vals = append(vals, val)
		}
	}
	r.add(vals)
}

func (r *Redactor) add(vals []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, v := range vals {
		if len(needlesFor(v)) == 0 {
			continue
		}
		if _, ok := r.raw[v]; ok {
			continue
		}
		if r.raw == nil {
			r.raw = make(map[string]struct{})
		}
		r.raw[v] = struct{}{}
		changed = true
	}
	if !changed {
		return
	}
	seen := make(map[string]struct{})
	var needles []string
	for v := range r.raw {
		for _, n := range needlesFor(v) {
			if _, ok := seen[n]; !ok {
				seen[n] = struct{}{}
				needles = append(needles, n)
			}
		}
	}
	r.vals.Store(newValueSet(needles))
}

// needlesFor returns the strings to mask for one registered value: the
// value and its encodings, each cut free of any overlap with Marker.
func needlesFor(v string) []string {
	if len(v) < MinValueLen || strings.TrimSpace(v) == "" {
		return nil
	}
	variants := []string{
		v,
		jsonEscape(v, false),
		jsonEscape(v, true),
		url.QueryEscape(v),
		url.PathEscape(v),
		base64.RawStdEncoding.EncodeToString([]byte(v)),
		base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
	var out []string
	for _, variant := range variants {
		for _, p := range markerFree(variant) {
			if len(p) >= MinValueLen && strings.TrimSpace(p) != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// jsonEscape returns v as it appears inside a JSON string literal.
func jsonEscape(v string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return v
	}
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// markerFree returns the parts of v that can never overlap an occurrence
// of Marker in any text: v is split at each Marker it contains, and each
// part loses any prefix that is a suffix of Marker and any suffix that is
// a prefix of Marker; parts inside Marker are dropped. Masking only these
// parts keeps redaction idempotent: the Marker written for one secret can
// never combine with the text around it into another registered value.
func markerFree(v string) []string {
	var out []string
	for _, p := range strings.Split(v, Marker) {
		for {
			k := overlapPrefix(p)
			l := overlapSuffix(p[k:])
			if k == 0 && l == 0 {
				break
			}
			p = p[k : len(p)-l]
		}
		if p != "" && !strings.Contains(Marker, p) {
			out = append(out, p)
		}
	}
	return out
}

// overlapPrefix returns the length of the longest prefix of p that is a
// proper suffix of Marker.
func overlapPrefix(p string) int {
	for k := len(Marker) - 1; k > 0; k-- {
		if strings.HasPrefix(p, Marker[len(Marker)-k:]) {
			return k
		}
	}
	return 0
}

// overlapSuffix returns the length of the longest suffix of p that is a
// proper prefix of Marker.
func overlapSuffix(p string) int {
	for k := len(Marker) - 1; k > 0; k-- {
		if strings.HasSuffix(p, Marker[:k]) {
			return k
		}
	}
	return 0
}

// String returns s with every registered value and every credential
// pattern replaced by Marker. When nothing matches it returns s itself.
func (r *Redactor) String(s string) string {
	var sc scan
	sc.init(s, 0, true)
	r.detect(&sc)
	if len(sc.spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	writeRedacted(&b, s, 0, len(s), sc.spans)
	return b.String()
}

// Bytes is String for a byte slice. When nothing matches it returns b
// itself; otherwise a new slice. b is not modified.
func (r *Redactor) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	// The view is only read, and only during this call.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	var sc scan
	sc.init(s, 0, true)
	r.detect(&sc)
	if len(sc.spans) == 0 {
		return b
	}
	var out strings.Builder
	out.Grow(len(b))
	writeRedacted(&out, s, 0, len(s), sc.spans)
	return []byte(out.String())
}

// writeRedacted writes s[from:to] to w with the given spans replaced by
// Marker. spans must lie within [from, to); they are sorted in place.
// Overlapping and touching spans become one Marker: two Markers in a row
// could read as one value to a later pass, which would then merge them.
func writeRedacted(w *strings.Builder, s string, from, to int, spans []span) {
	slices.SortFunc(spans, func(a, b span) int { return a.s - b.s })
	pos := from
	for i := 0; i < len(spans); {
		start, end := spans[i].s, spans[i].e
		for i++; i < len(spans) && spans[i].s <= end; i++ {
			end = max(end, spans[i].e)
		}
		w.WriteString(s[pos:start])
		w.WriteString(Marker)
		pos = end
	}
	w.WriteString(s[pos:to])
}
