package toolschema

import (
	"fmt"
	"slices"
	"strings"
)

// Quirks are the provider-specific changes Adapt makes. The zero value
// changes nothing.
type Quirks struct {
	// InlineRefs replaces every local "$ref" ("#/$defs/…",
	// "#/definitions/…", "#") by a copy of its target and removes "$defs"
	// and "definitions", for endpoints that reject references. A
	// recursive reference cannot be inlined and is an error (ErrBadRef).
	InlineRefs bool
	// DropKeywords are removed from every schema object (not from
	// "properties" maps, whose keys are property names).
	DropKeywords []string
	// AllowKeywords, when non-empty, is the complete list of keywords kept
	// in every schema object; others are removed (after the rewrites
	// below, so a "const" rewritten as "enum" survives).
	AllowKeywords []string
	// OneOfToAnyOf renames "oneOf" to "anyOf" (looser, but accepted where
	// oneOf is not).
	OneOfToAnyOf bool
	// ConstToEnum rewrites "const": v as "enum": [v].
	ConstToEnum bool
	// SingleType rewrites a "type" list: ["T","null"] becomes "type":"T"
	// with "nullable": true, any other list an "anyOf" of single types.
	SingleType bool
	// Strict makes the schema valid for OpenAI's strict function calling:
	// every object gets "additionalProperties": false and lists all its
	// properties in "required"; a property that was optional becomes
	// nullable (its "type" gains "null"). The caller also sets
	// "strict": true on the function.
	Strict bool
}

// QuirksFor returns the schema quirks of a provider preset name (as in
// ODEK_PROVIDER); unknown names and "" need none. Strict mode is never
// implied by a provider: it is opted into per model.
//
// Gemini's OpenAI-compatible endpoint translates tools into its own
// function declarations, which accept an OpenAPI subset: it answers 400
// ("Invalid JSON payload received. Unknown name \"$schema\" …") for
// $schema, $ref, additionalProperties, propertyNames and const, and for a
// list-valued type ("Proto field is not repeating").
func QuirksFor(provider string) Quirks {
	switch strings.ToLower(provider) {
	case "gemini", "vertex", "vertex-ai", "google":
		return Quirks{
			InlineRefs:    true,
			AllowKeywords: geminiKeywords,
			OneOfToAnyOf:  true,
			ConstToEnum:   true,
			SingleType:    true,
		}
	}
	return Quirks{}
}

// geminiKeywords are the fields of Gemini's Schema object (an OpenAPI
// 3.0 subset); the compatibility endpoint answers 400 "Unknown name" for
// any other.
var geminiKeywords = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
	"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

// Adapt applies q to a schema (normally one returned by Normalize) and
// returns the result with the changes made. When q changes nothing,
// schema itself is returned.
func Adapt(schema []byte, q Quirks) ([]byte, []Repair, error) {
	if !q.InlineRefs && len(q.DropKeywords) == 0 && len(q.AllowKeywords) == 0 && !q.OneOfToAnyOf && !q.ConstToEnum && !q.SingleType && !q.Strict {
		return schema, nil, nil
	}
	root, err := parse(schema)
	if err != nil {
		return nil, nil, err
	}
	a := &adapter{q: q, root: root}
	out := any(root)
	if q.InlineRefs {
		if out, err = a.inline(root, "", 0, nil); err != nil {
			return nil, nil, err
		}
		if m, ok := out.(node); ok {
			for _, k := range []string{"$defs", "definitions"} {
				if _, has := m[k]; has {
					delete(m, k)
					a.add("", KindInlinedRef, "removed "+k+" after inlining")
				}
			}
		}
		if len(marshal(out.(node))) > MaxInlinedBytes {
			return nil, nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, MaxInlinedBytes)
		}
	}
	a.rewrite(out.(node), "", 0)
	if len(a.repairs) == 0 {
		return schema, nil, nil
	}
	return marshal(out.(node)), a.repairs, nil
}

type adapter struct {
	walker
	q    Quirks
	root node
}

// resolve returns the target of a local $ref.
func (a *adapter) resolve(ref string) (any, bool) {
	if ref == "#" {
		return a.root, true
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = a.root
	for _, part := range strings.Split(rest, "/") {
		m, ok := cur.(node)
		if !ok {
			return nil, false
		}
		if cur, ok = m[unescapePointer(part)]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// inline returns a copy of v with local references replaced; stack holds
// the references being expanded (a repeat is recursion).
func (a *adapter) inline(v any, path string, d int, stack []string) (any, error) {
	if d > MaxDepth {
		return nil, fmt.Errorf("%w (%d) at %s while inlining $ref", ErrTooDeep, MaxDepth, path)
	}
	switch t := v.(type) {
	case node:
		if ref, ok := t["$ref"].(string); ok {
			if slices.Contains(stack, ref) {
				return nil, fmt.Errorf("%w: %s/$ref %q is recursive", ErrBadRef, path, ref)
			}
			target, ok := a.resolve(ref)
			if !ok {
				return nil, fmt.Errorf("%w: %s/$ref %q is not a local reference that resolves", ErrBadRef, path, ref)
			}
			a.add(path, KindInlinedRef, fmt.Sprintf("inlined $ref %q", ref))
			exp, err := a.inline(target, path, d+1, append(stack, ref))
			if err != nil {
				return nil, err
			}
			m, ok := exp.(node)
			if !ok {
				return nil, fmt.Errorf("%w: %s/$ref %q does not point to a schema object", ErrBadRef, path, ref)
			}
			// Sibling keywords of $ref (description, …) override the target's.
			for _, k := range sortedKeys(t) {
				sv := t[k]
				if k == "$ref" {
					continue
				}
				c, err := a.inline(sv, path+"/"+escapePointer(k), d+1, stack)
				if err != nil {
					return nil, err
				}
				m[k] = c
			}
			return m, nil
		}
		out := make(node, len(t))
		for _, k := range sortedKeys(t) {
			sv := t[k]
			if d == 0 && (k == "$defs" || k == "definitions") {
				out[k] = sv // removed by the caller
				continue
			}
			c, err := a.inline(sv, path+"/"+escapePointer(k), d+1, stack)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := a.inline(e, fmt.Sprintf("%s/%d", path, i), d+1, stack)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// rewrite applies the keyword quirks to the schema n and its subschemas.
func (a *adapter) rewrite(n node, path string, d int) {
	if d > MaxDepth {
		return
	}
	for _, k := range a.q.DropKeywords {
		if _, ok := n[k]; ok {
			delete(n, k)
			a.add(path, KindDroppedKeyword, fmt.Sprintf("removed %q, which the endpoint rejects", k))
		}
	}
	if a.q.ConstToEnum {
		if c, ok := n["const"]; ok {
			delete(n, "const")
			n["enum"] = []any{c}
			a.add(path, KindDroppedKeyword, `rewrote "const" as a one-value "enum"`)
		}
	}
	if a.q.OneOfToAnyOf {
		if v, ok := n["oneOf"]; ok {
			delete(n, "oneOf")
			if _, has := n["anyOf"]; !has {
				n["anyOf"] = v
			}
			a.add(path, KindDroppedKeyword, `rewrote "oneOf" as "anyOf"`)
		}
	}
	if a.q.SingleType {
		if l, ok := n["type"].([]any); ok {
			var types []any
			nullable := false
			for _, t := range l {
				if t == "null" {
					nullable = true
				} else {
					types = append(types, t)
				}
			}
			switch {
			case len(types) == 1:
				n["type"] = types[0]
			default:
				delete(n, "type")
				alts := make([]any, len(types))
				for i, t := range types {
					alts[i] = node{"type": t}
				}
				n["anyOf"] = alts
			}
			if nullable {
				n["nullable"] = true
			}
			a.add(path, KindDroppedKeyword, `rewrote a "type" list as a single type`)
		}
	}
	if a.q.Strict && hasType(n, "object") {
		props, _ := n["properties"].(node)
		if props == nil {
			props = node{}
			n["properties"] = props
		}
		var req []any
		if l, ok := n["required"].([]any); ok {
			req = l
		}
		all := make([]any, 0, len(props))
		changed := false
		for _, name := range sortedKeys(props) {
			all = append(all, name)
			if !slices.Contains(req, any(name)) {
				changed = true
				if p, ok := props[name].(node); ok {
					makeNullable(p)
				}
			}
		}
		if ap, ok := n["additionalProperties"]; !ok || ap != false {
			n["additionalProperties"] = false
			changed = true
		}
		n["required"] = all
		if changed {
			a.add(path, KindStrict, "made strict: additionalProperties false, every property required, optional ones nullable")
		}
	}
	if len(a.q.AllowKeywords) > 0 {
		for _, k := range sortedKeys(n) {
			if !slices.Contains(a.q.AllowKeywords, k) {
				delete(n, k)
				a.add(path, KindDroppedKeyword, fmt.Sprintf("removed %q, which the endpoint rejects", k))
			}
		}
	}
	for _, k := range subschemaKeys {
		if s, ok := n[k].(node); ok {
			a.rewrite(s, path+"/"+k, d+1)
		}
	}
	for _, k := range subschemaListKeys {
		if l, ok := n[k].([]any); ok {
			for i, e := range l {
				if s, ok := e.(node); ok {
					a.rewrite(s, fmt.Sprintf("%s/%s/%d", path, k, i), d+1)
				}
			}
		}
	}
	for _, k := range subschemaMapKeys {
		if m, ok := n[k].(node); ok {
			for _, name := range sortedKeys(m) {
				if s, ok := m[name].(node); ok {
					a.rewrite(s, path+"/"+k+"/"+escapePointer(name), d+1)
				}
			}
		}
	}
}

// makeNullable lets a property schema also accept null.
func makeNullable(p node) {
	switch t := p["type"].(type) {
	case string:
		if t != "null" {
			p["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			p["type"] = append(t, "null")
		}
	case nil:
		if l, ok := p["anyOf"].([]any); ok {
			p["anyOf"] = append(l, node{"type": "null"})
		}
	}
}
