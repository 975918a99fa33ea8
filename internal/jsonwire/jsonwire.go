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
