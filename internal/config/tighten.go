package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// section is one typed section of both files: where it lives in a file
// (key "" ⇒ top-level keys) and where the merged value goes.
type section struct {
	key string
	dst any // pointer to the Config field
}

func (c *Config) sections() []section {
	return []section{
		{"limits", &c.Limits},
		{"subagent", &c.Subagent},
		{"sandbox", &c.Sandbox},
		{"", &c.Context},
	}
}

// decodeSection decodes one section of a file strictly: unknown keys
// inside it are errors naming the field, so a misspelt cap never silently
// means "no cap". key "" decodes the typed top-level keys out of the
// whole file (other keys there belong to other sections).
func decodeSection(path string, raw json.RawMessage, key string, dst any) (bool, error) {
	if raw == nil {
		return false, nil
	}
	l := Layer{Path: path, Raw: raw}
	if key == "" {
		if err := json.Unmarshal(raw, dst); err != nil {
			return false, decodeError(path, raw, err)
		}
		return true, nil
	}
	var sec json.RawMessage
	present, err := l.Section(key, &sec)
	if err != nil || !present {
		return present, err
	}
	// Types first, through Section, for errors with a line and the dotted
	// path; then unknown keys.
	if _, err := l.Section(key, dst); err != nil {
		return true, err
	}
	dec := json.NewDecoder(bytes.NewReader(sec))
	dec.DisallowUnknownFields()
	fresh := reflect.New(reflect.TypeOf(dst).Elem()).Interface()
	if err := dec.Decode(fresh); err != nil {
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return true, &Error{Source: path, Field: key + "." + strings.Trim(name, `"`), Reason: "unknown field (misspelt? see docs/CONFIG.md)", Err: ErrInvalid}
	}
	return true, nil
}

// checkValue validates v (a section struct, pointer, list, map or scalar)
// against its check tags. field is the dotted key of v.
func checkValue(source, field string, v reflect.Value, tag string) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return checkValue(source, field, v.Elem(), tag)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			sub := name
			if field != "" {
				sub = field + "." + name
			}
			if err := checkValue(source, sub, v.Field(i), f.Tag.Get("check")); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		rules := parseRules(tag)
		if n, ok := rules["maxitems"]; ok {
			if limit, _ := strconv.Atoi(n); v.Len() > limit {
				return invalidf(source, field, "has %d entries: at most %d (limit maxitems)", v.Len(), limit)
			}
		}
		for i := range v.Len() {
			if err := checkValue(source, fmt.Sprintf("%s[%d]", field, i), v.Index(i), tag); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			if k.String() == "" {
				return invalidf(source, field, "an empty key")
			}
			if err := checkValue(source, field+"."+k.String(), v.MapIndex(k), tag); err != nil {
				return err
			}
		}
		return nil
	}
	rules := parseRules(tag)
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Float64:
		x := number(v)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return invalidf(source, field, "got %v: want a finite number", x)
		}
		if s, ok := rules["min"]; ok {
			if lo, _ := strconv.ParseFloat(s, 64); x < lo {
				return invalidf(source, field, "got %v: want at least %s (limit min)", x, s)
			}
		}
		if s, ok := rules["max"]; ok {
			if hi, _ := strconv.ParseFloat(s, 64); x > hi {
				return invalidf(source, field, "got %v: want at most %s (limit max)", x, s)
			}
		}
	case reflect.String:
		s := v.String()
		if opts, ok := rules["oneof"]; ok && !slices.Contains(strings.Split(opts, "|"), s) {
			return invalidf(source, field, "got %q: want one of %s", clip(s), quoteChoices(opts))
		}
		if _, ok := rules["abs"]; ok && !filepath.IsAbs(s) {
			return invalidf(source, field, "%q is not an absolute path", clip(s))
		}
	}
	return nil
}

func quoteChoices(opts string) string {
	var q []string
	for _, o := range strings.Split(opts, "|") {
		if o == "" {
			q = append(q, "unset")
		} else {
			q = append(q, strconv.Quote(o))
		}
	}
	return strings.Join(q, ", ")
}

func parseRules(tag string) map[string]string {
	rules := map[string]string{}
	for _, r := range strings.Split(tag, ",") {
		if r == "" {
			continue
		}
		k, v, _ := strings.Cut(r, "=")
		rules[k] = v
	}
	return rules
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func number(v reflect.Value) float64 {
	if v.Kind() == reflect.Float64 {
		return v.Float()
	}
	return float64(v.Int())
}

// tighten merges a project section pr onto the operator's op (both of
// the same struct type) by the fields' project tags, into op. It records
// each field's source in sources under prefix and returns a Warning for
// every project value a rule refused. Pure.
func tighten(projectPath, prefix string, op, pr reflect.Value, sources map[string]string) []Warning {
	var warns []Warning
	t := op.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key := jsonName(f)
		if prefix != "" {
			key = prefix + "." + key
		}
		o, p := op.Field(i), pr.Field(i)
		if !o.IsZero() {
			sources[key] = SourceOperator
		} else if _, ok := sources[key]; !ok {
			sources[key] = SourceDefault
		}
		if p.IsZero() {
			continue
		}
		rule := f.Tag.Get("project")
		refuse := func(format string, args ...any) {
			warns = append(warns, Warning{Source: projectPath, Field: key,
				Message: fmt.Sprintf("ignored: "+format+" (rule %q: a project file may only tighten the operator's settings)", append(args, rule)...)})
		}
		take := func(v reflect.Value) { o.Set(v); sources[key] = SourceProject }
		switch {
		case rule == "never":
			refuse("operator config only")
		case rule == "on":
			take(p)
		case strings.HasPrefix(rule, "only="):
			if want := strings.TrimPrefix(rule, "only="); p.String() == want || p.String() == o.String() {
				take(p)
			} else {
				refuse("a project may only set %q", want)
			}
		case rule == "append":
			take(reflect.AppendSlice(reflect.AppendSlice(reflect.MakeSlice(o.Type(), 0, o.Len()+p.Len()), o), p))
		case rule == "subset":
			kept := reflect.MakeSlice(o.Type(), 0, p.Len())
			for j := range p.Len() {
				e := p.Index(j)
				if containsValue(o, e) {
					kept = reflect.Append(kept, e)
				} else {
					refuse("%v is not in the operator's list", e.Interface())
				}
			}
			take(kept)
		case rule == "lower" && o.Kind() == reflect.Map:
			merged := reflect.MakeMapWithSize(o.Type(), o.Len()+p.Len())
			for _, k := range o.MapKeys() {
				merged.SetMapIndex(k, o.MapIndex(k))
			}
			iter := p.MapRange()
			for iter.Next() {
				cur := merged.MapIndex(iter.Key())
				pv := number(iter.Value())
				switch {
				case pv == 0:
				case !cur.IsValid() || number(cur) == 0 || pv <= number(cur):
					merged.SetMapIndex(iter.Key(), iter.Value())
					sources[key] = SourceProject
				default:
					refuse("%s[%q] %v is above the operator's %v", key, iter.Key().String(), pv, number(cur))
				}
			}
			o.Set(merged)
		case rule == "lower":
			cur := number(o)
			if cur == 0 {
				if d, ok := f.Tag.Lookup("default"); ok {
					cur, _ = strconv.ParseFloat(d, 64)
				}
			}
			if cur == 0 || number(p) <= cur {
				take(p)
			} else {
				refuse("%v is above the operator's %v", number(p), cur)
			}
		default:
			take(p)
		}
	}
	return warns
}

func containsValue(list, e reflect.Value) bool {
	for i := range list.Len() {
		if list.Index(i).Equal(e) {
			return true
		}
	}
	return false
}

// buildSections decodes, validates and merges the typed sections of both
// files into c.
func buildSections(c *Config) ([]Warning, error) {
	op, proj := c.Layers.Operator, c.Layers.Project
	var warns []Warning
	for _, s := range c.sections() {
		dst := reflect.ValueOf(s.dst).Elem()
		opv := reflect.New(dst.Type())
		if _, err := decodeSection(op.Path, op.Raw, s.key, opv.Interface()); err != nil {
			return nil, err
		}
		if err := checkValue(op.Path, s.key, opv.Elem(), ""); err != nil {
			return nil, err
		}
		prv := reflect.New(dst.Type())
		if _, err := decodeSection(proj.Path, proj.Raw, s.key, prv.Interface()); err != nil {
			return nil, err
		}
		if err := checkValue(proj.Path, s.key, prv.Elem(), ""); err != nil {
			return nil, err
		}
		warns = append(warns, tighten(proj.Path, s.key, opv.Elem(), prv.Elem(), c.Sources)...)
		if err := checkValue(op.Path+" and "+proj.Path, s.key, opv.Elem(), ""); err != nil {
			return nil, err // an appended list past its limit
		}
		dst.Set(opv.Elem())
	}
	for _, in := range []struct {
		l   Layer
		dst *MCPSection
	}{{op, &c.MCPServers.Operator}, {proj, &c.MCPServers.Project}} {
		in.dst.Path = in.l.Path
		if _, err := in.l.Section("mcp_servers", &in.dst.Raw); err != nil {
			return nil, err
		}
	}
	return warns, nil
}
