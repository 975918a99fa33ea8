// Package jsonwire holds the small JSON helpers of the chat-completions
// wire format that the agent's Message JSON and the LLM client's request
// encoder and response decoder share: a string encoder that writes exactly
// what encoding/json writes (without HTML escaping), and the readers of
// message content and tool-call arguments in their several accepted
// shapes. Pure functions, safe for concurrent use.
package jsonwire

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json
// does with SetEscapeHTML(false): '"', '\\' and control characters
// escaped, U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ContentText renders message content: a string as is, null as "", an
// array of parts as the concatenation of their "text" fields.
func ContentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := StringValue(raw); ok {
		return s
	}
	if len(raw) > 0 && raw[0] == '[' {
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			var b []byte
			for _, p := range parts {
				b = append(b, p.Text...)
			}
			return string(b)
		}
	}
	return ""
}

// StringValue decodes raw (already trimmed) when it is a JSON string.
func StringValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// ArgumentsText renders tool-call arguments: a JSON string as its value,
// an object or array as its JSON text, null as "".
func ArgumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := StringValue(raw); ok {
		return s
	}
	if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String()
		}
		return string(raw)
	}
	return ""
}

// IsOneOf reports whether k is one of keys, ignoring case: encoding/json
// matches struct fields case-insensitively, so an Extra member "Content"
// would come back from a session file as the content.
func IsOneOf(k string, keys []string) bool {
	for _, s := range keys {
		if strings.EqualFold(k, s) {
			return true
		}
	}
	return false
}

// CollectExtra returns the members of the JSON object b whose keys are
// neither known nor skipped and whose values are not null, empty arrays
// or empty objects, as one compact object sorted by key; nil when none.
func CollectExtra(b []byte, known, skipped []string) (json.RawMessage, error) {
	if !mayHaveExtra(b, known, skipped) {
		return nil, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	var keys []string
	for k, v := range all {
		if IsOneOf(k, known) || IsOneOf(k, skipped) || Empty(v) {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(AppendString(nil, k))
		buf.WriteByte(':')
		if err := json.Compact(&buf, all[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Empty reports null, [] and {} (with any spacing).
func Empty(v []byte) bool {
	v = bytes.TrimSpace(v)
	if string(v) == "null" || len(v) == 0 {
		return true
	}
	if len(v) >= 2 && (v[0] == '[' && v[len(v)-1] == ']' || v[0] == '{' && v[len(v)-1] == '}') {
		return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
	}
	return false
}

// mayHaveExtra reports whether the JSON object b may have a member
// CollectExtra would keep: a quick scan of its top-level keys that spares
// decoding the object into a map for the common message without provider
// fields. Anything unusual (escaped keys, bad JSON) reports true and
// leaves the decision to the full decode.
func mayHaveExtra(b []byte, known, skipped []string) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return true
	}
	i++
	for {
		i = skipWS(b, i)
		if i < len(b) && b[i] == '}' {
			return false
		}
		if i >= len(b) || b[i] != '"' {
			return true
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return true
		}
		key := b[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return true
		}
		i = skipWS(b, i+2+end)
		if i >= len(b) || b[i] != ':' {
			return true
		}
		start := skipWS(b, i+1)
		i = skipValue(b, start)
		if i < 0 {
			return true
		}
		if !IsOneOf(string(key), known) && !IsOneOf(string(key), skipped) && !Empty(b[start:i]) {
			return true
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i, or
// -1 when it does not end.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return -1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
		if depth == 0 && i < len(b) && (b[i-1] == '"' || b[i-1] == '}' || b[i-1] == ']') {
			return i
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}
