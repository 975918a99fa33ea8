// Package toolschema repairs the JSON Schemas that odek declares as tool
// parameters so that chat-completions providers accept them, and adapts
// them to the quirks of particular endpoints.
//
// Normalize is provider-independent: it fixes what every provider rejects
// or misreads (a parameters schema that is not "type":"object", objects
// without "properties", arrays without "items", "required" entries that
// name no property) and reports each repair, so that `odek ext check` can
// warn a server author about each one. Adapt applies the opt-in,
// provider-specific changes described by Quirks ($ref inlining, OpenAI
// strict mode, keywords an endpoint refuses).
//
// Both are pure functions of their input: no state, safe for concurrent
// use, and they never modify or retain the bytes they are given. A schema
// that needs no change is returned as the very same slice.
package toolschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MaxDepth bounds the nesting of schemas this package walks (and the
// depth of $ref expansion); deeper input is rejected with ErrTooDeep.
const MaxDepth = 64

// MaxInlinedBytes bounds the size of a schema after $ref inlining; a
// schema that would grow beyond it is rejected with ErrTooLarge.
const MaxInlinedBytes = 1 << 20

// Errors. Each returned error wraps one of these and names the JSON
// pointer of the offending part.
var (
	ErrNotObject = errors.New("toolschema: tool parameters must be a JSON object schema")
	ErrInvalid   = errors.New("toolschema: tool parameters are not valid JSON")
	ErrTooDeep   = errors.New("toolschema: schema nesting exceeds MaxDepth")
	ErrTooLarge  = errors.New("toolschema: inlined schema exceeds MaxInlinedBytes")
	ErrBadRef    = errors.New("toolschema: $ref cannot be inlined")
)

// Repair is one change made to a schema.
type Repair struct {
	// Path is the JSON pointer (RFC 6901) of the schema that was changed;
	// "" is the top level.
	Path string
	// Kind is a stable, low-cardinality name of the change, e.g.
	// "added_type_object"; see the Kind constants.
	Kind string
	// Detail says what was changed, for a human.
	Detail string
}

func (r Repair) String() string {
	p := r.Path
	if p == "" {
		p = "(top level)"
	}
	return p + ": " + r.Detail
}

// Repair kinds.
const (
	KindEmptySchema       = "empty_schema"        // absent/null/{} parameters became an empty object schema
	KindAddedTypeObject   = "added_type_object"   // top level had no "type"
	KindAddedProperties   = "added_properties"    // an object schema had no (or a null) "properties"
	KindAddedItems        = "added_items"         // an array schema had no "items"
	KindDroppedRequired   = "dropped_required"    // "required" named a property that does not exist, or was not a list of strings
	KindInlinedRef        = "inlined_ref"         // a local $ref was replaced by its target (Adapt)
	KindDroppedKeyword    = "dropped_keyword"     // a keyword the endpoint refuses was removed (Adapt)
	KindStrict            = "strict"              // made strict-mode compatible (Adapt)
	KindObjectTypeInArray = "type_list_to_object" // top-level "type" was a list containing "object"
)

type node = map[string]any

// Normalize returns schema repaired so that every provider accepts it as
// the parameters of a function tool, and the repairs made, in document
// order. Absent, null and empty input becomes {"type":"object",
// "properties":{}}. A schema whose top level is not an object, or
// declares a type other than "object", is an error (ErrNotObject); so is
// invalid JSON (ErrInvalid). When nothing needs repair, schema itself is
// returned and repairs is nil.
func Normalize(schema []byte) (out []byte, repairs []Repair, err error) {
	trimmed := bytes.TrimSpace(schema)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte(`{"type":"object","properties":{}}`), []Repair{{Kind: KindEmptySchema,
			Detail: `no parameters schema: sent as {"type":"object","properties":{}}`}}, nil
	}
	root, err := parse(trimmed)
	if err != nil {
		return nil, nil, err
	}
	w := &walker{}
	switch t := root["type"].(type) {
	case nil: // absent or null
		root["type"] = "object"
		w.add("", KindAddedTypeObject, `added "type":"object" at the top level`)
	case string:
		if t != "object" {
			return nil, nil, fmt.Errorf("%w: top-level \"type\" is %q", ErrNotObject, t)
		}
	case []any:
		if !slices.Contains(t, any("object")) {
			return nil, nil, fmt.Errorf("%w: top-level \"type\" is %s", ErrNotObject, compact(t))
		}
		root["type"] = "object"
		w.add("", KindObjectTypeInArray, `top-level "type" list replaced by "object"`)
	default:
		return nil, nil, fmt.Errorf("%w: top-level \"type\" is not a string", ErrNotObject)
	}
	if err := w.walk(root, "", 0); err != nil {
		return nil, nil, err
	}
	if len(w.repairs) == 0 {
		return schema, nil, nil
	}
	return marshal(root), w.repairs, nil
}

// parse decodes a schema that must be a JSON object, keeping numbers as
// written.
func parse(b []byte) (node, error) {
	if !json.Valid(b) {
		return nil, ErrInvalid
	}
	if b[0] != '{' {
		return nil, fmt.Errorf("%w: the top level is not an object", ErrNotObject)
	}
	if depth(b) > MaxDepth {
		return nil, fmt.Errorf("%w (%d)", ErrTooDeep, MaxDepth)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var n node
	if err := d.Decode(&n); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return n, nil
}

// depth returns the maximum nesting of objects and arrays in valid JSON.
func depth(b []byte) int {
	d, top, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			d++
			top = max(top, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return top
}

func marshal(n node) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(n); err != nil {
		panic(err) // cannot happen: decoded JSON values only
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

type walker struct {
	repairs []Repair
}

func (w *walker) add(path, kind, detail string) {
	w.repairs = append(w.repairs, Repair{Path: path, Kind: kind, Detail: detail})
}

// subschemaKeys hold one schema; subschemaListKeys a list of schemas;
// subschemaMapKeys an object whose values are schemas.
var (
	subschemaKeys     = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems"}
	subschemaListKeys = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
	subschemaMapKeys  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// hasType reports whether the schema's "type" is t or a list containing t.
func hasType(n node, t string) bool {
	switch v := n["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

// walk repairs n (a schema at path) and its subschemas in place.
func (w *walker) walk(n node, path string, d int) error {
	if d > MaxDepth {
		return fmt.Errorf("%w (%d) at %s", ErrTooDeep, MaxDepth, path)
	}
	if hasType(n, "object") {
		props, isMap := n["properties"].(node)
		if !isMap {
			if n["properties"] != nil {
				return fmt.Errorf("%w: %s/properties is not an object", ErrNotObject, path)
			}
			props = node{}
			n["properties"] = props
			w.add(path, KindAddedProperties, `added "properties":{} to an object schema`)
		}
		if req, present := n["required"]; present {
			w.fixRequired(n, props, req, path)
		}
	}
	if hasType(n, "array") {
		if _, ok := n["items"]; !ok {
			if _, tuple := n["prefixItems"]; !tuple {
				n["items"] = node{}
				w.add(path, KindAddedItems, `added "items":{} to an array schema`)
			}
		}
	}
	for _, k := range subschemaKeys {
		if s, ok := n[k].(node); ok {
			if err := w.walk(s, path+"/"+k, d+1); err != nil {
				return err
			}
		}
	}
	for _, k := range subschemaListKeys {
		if l, ok := n[k].([]any); ok {
			for i, e := range l {
				if s, ok := e.(node); ok {
					if err := w.walk(s, fmt.Sprintf("%s/%s/%d", path, k, i), d+1); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, k := range subschemaMapKeys {
		if m, ok := n[k].(node); ok {
			for _, name := range sortedKeys(m) {
				if s, ok := m[name].(node); ok {
					if err := w.walk(s, path+"/"+k+"/"+escapePointer(name), d+1); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// fixRequired keeps the entries of "required" that are strings naming a
// declared property (when properties are declared), once each.
func (w *walker) fixRequired(n, props node, req any, path string) {
	list, ok := req.([]any)
	if !ok {
		delete(n, "required")
		w.add(path, KindDroppedRequired, `removed "required", which was not a list`)
		return
	}
	kept := make([]any, 0, len(list))
	seen := map[string]bool{}
	var dropped []string
	for _, e := range list {
		s, ok := e.(string)
		switch {
		case !ok:
			dropped = append(dropped, compact(e))
		case seen[s]:
			dropped = append(dropped, fmt.Sprintf("%q (repeated)", s))
		case props != nil && props[s] == nil && !hasKey(props, s):
			dropped = append(dropped, fmt.Sprintf("%q (no such property)", s))
		default:
			seen[s] = true
			kept = append(kept, s)
		}
	}
	if len(dropped) == 0 {
		return
	}
	if len(kept) == 0 {
		delete(n, "required")
	} else {
		n["required"] = kept
	}
	w.add(path, KindDroppedRequired, "removed from \"required\": "+strings.Join(dropped, ", "))
}

func hasKey(m node, k string) bool { _, ok := m[k]; return ok }

func sortedKeys(m node) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
