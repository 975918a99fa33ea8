package events

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
)

// maxDataDepth bounds the nesting of Data that redaction walks; deeper
// values (and self-referencing ones) are replaced by deepValue.
const maxDataDepth = 32

const deepValue = "[odek: value nested too deep]"

// redactMap returns a copy of m with redact applied to every key and, via
// redactValue, to every value. A nil map stays nil.
func redactMap(m map[string]any, redact func(string) string, depth int) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if redact != nil {
			k = redact(k)
		}
		out[k] = redactValue(v, redact, depth+1)
	}
	return out
}

// redactValue returns a copy of v with redact applied to every string in
// it. NaN and infinite floats become nil (JSON null). Values of the shapes
// JSON decoding produces, and []string and
// map[string]string, are walked directly; numbers, booleans and times
// carry no text and are kept. Any other value is converted to its JSON
// form and walked, so no string can slip past redaction; one that cannot
// be encoded becomes the string "[odek: unencodable <error>]".
func redactValue(v any, redact func(string) string, depth int) any {
	if depth > maxDataDepth {
		return deepValue
	}
	switch v := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		uintptr, json.Number, time.Time, time.Duration:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil // JSON has no NaN or infinity; null keeps the event encodable
		}
		return v
	case float32:
		return redactValue(float64(v), redact, depth)
	case string:
		if redact == nil {
			return v
		}
		return redact(v)
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			if redact != nil {
				s = redact(s)
			}
			out[i] = s
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(v))
		for k, s := range v {
			if redact != nil {
				k, s = redact(k), redact(s)
			}
			out[k] = s
		}
		return out
	case map[string]any:
		return redactMap(v, redact, depth)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactValue(x, redact, depth+1)
		}
		return out
	case error:
		return redactValue(v.Error(), redact, depth)
	case json.RawMessage:
		return redactJSON(v, redact, depth)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "[odek: unencodable " + shortType(err) + "]"
		}
		return redactJSON(b, redact, depth)
	}
}

// redactJSON decodes a JSON document and redacts the result; text that is
// not JSON is redacted as a string.
func redactJSON(b []byte, redact func(string) string, depth int) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil || dec.More() {
		return redactValue(string(b), redact, depth)
	}
	return redactValue(x, redact, depth)
}

// shortType names an encoding error by its kind only: its text may quote
// the value.
func shortType(err error) string {
	switch err.(type) {
	case *json.UnsupportedTypeError:
		return "type"
	case *json.UnsupportedValueError:
		return "value"
	case *json.MarshalerError:
		return "marshaler"
	default:
		return "value"
	}
}
