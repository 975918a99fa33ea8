package skills

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Limits of the SKILL.md format (the open Agent Skills format's, plus
// odek's size bounds).
const (
	// MaxNameLen and MaxDescriptionLen are the format's limits.
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
	// MaxSkillFileBytes bounds a SKILL.md; MaxFrontMatterBytes its
	// front matter.
	MaxSkillFileBytes   = 256 << 10
	MaxFrontMatterBytes = 16 << 10
)

// ErrFormat: a SKILL.md breaks the format; the error names the field or
// limit.
var ErrFormat = errors.New("skills: invalid SKILL.md")

// Meta is a SKILL.md's front matter.
type Meta struct {
	Name        string
	Description string
	// License, Compatibility and AllowedTools are optional fields of the
	// format, kept for `odek skills show`; odek does not enforce
	// allowed-tools (the danger policy applies to every call).
	License       string
	Compatibility string
	AllowedTools  string
	// Metadata is the format's free string map.
	Metadata map[string]string
}

type rawMeta struct {
	Name          *string           `yaml:"name"`
	Description   *string           `yaml:"description"`
	License       string            `yaml:"license"`
	Compatibility string            `yaml:"compatibility"`
	AllowedTools  any               `yaml:"allowed-tools"`
	Metadata      map[string]string `yaml:"metadata"`
}

// Parse splits a SKILL.md into its front matter (YAML between a first
// line "---" and the next line "---") and its body, and checks the
// format's rules: name (1–64 of a-z, 0-9 and '-', no leading, trailing or
// doubled '-') and description (1–1024 characters) are required, the
// file is UTF-8 within MaxSkillFileBytes, the front matter within
// MaxFrontMatterBytes. A pure function; errors wrap ErrFormat.
func Parse(data []byte) (Meta, string, error) {
	bad := func(format string, a ...any) (Meta, string, error) {
		return Meta{}, "", fmt.Errorf("%w: "+format, append([]any{ErrFormat}, a...)...)
	}
	if len(data) > MaxSkillFileBytes {
		return bad("file is %d bytes, limit %d", len(data), MaxSkillFileBytes)
	}
	if !utf8.Valid(data) {
		return bad("file is not UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return bad(`no front matter: the file must start with a line "---"`)
	}
	var fm, body string
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		fm, body = "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n")
	} else {
		i := strings.Index(rest, "\n---\n")
		switch {
		case i >= 0:
			fm, body = rest[:i], rest[i+5:]
		case strings.HasSuffix(rest, "\n---"):
			fm, body = rest[:len(rest)-4], ""
		default:
			return bad(`front matter is not closed by a line "---"`)
		}
	}
	if len(fm) > MaxFrontMatterBytes {
		return bad("front matter is %d bytes, limit %d", len(fm), MaxFrontMatterBytes)
	}
	var r rawMeta
	dec := yaml.NewDecoder(strings.NewReader(fm))
	if err := dec.Decode(&r); err != nil && !errors.Is(err, errEOF) {
		return bad("front matter is not YAML: %v", clipErr(err))
	}
	if r.Name == nil {
		return bad("name is required")
	}
	if err := CheckName(*r.Name); err != nil {
		return Meta{}, "", err
	}
	if r.Description == nil || strings.TrimSpace(*r.Description) == "" {
		return bad("description is required")
	}
	desc := strings.TrimSpace(*r.Description)
	if n := utf8.RuneCountInString(desc); n > MaxDescriptionLen {
		return bad("description is %d characters, limit %d", n, MaxDescriptionLen)
	}
	m := Meta{Name: *r.Name, Description: desc, License: r.License, Compatibility: r.Compatibility, Metadata: r.Metadata}
	switch v := r.AllowedTools.(type) {
	case string:
		m.AllowedTools = v
	case []any:
		parts := make([]string, 0, len(v))
		for _, p := range v {
			parts = append(parts, fmt.Sprint(p))
		}
		m.AllowedTools = strings.Join(parts, " ")
	}
	return m, body, nil
}

// CheckName applies the format's name rule.
func CheckName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: name %q %s", ErrFormat, clip(name, 80), why)
	}
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("is %d characters, limit %d", len(name), MaxNameLen))
	case name[0] == '-' || name[len(name)-1] == '-':
		return bad("starts or ends with '-'")
	case strings.Contains(name, "--"):
		return bad("contains '--'")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return bad("may hold only a-z, 0-9 and '-'")
		}
	}
	return nil
}

// Clip cuts s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string { return clip(s, n) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func clipErr(err error) string { return clip(err.Error(), 200) }
