package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRules(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"---\nname: a\ndescription: b\n---\nbody", ""},
		{"---\nname: a\ndescription: b\n---", ""},
		{"---\nname: a\ndescription: b\n", "not closed"},
		{"name: a\n", "no front matter"},
		{"---\nname: a-\ndescription: b\n---\n", "ends with"},
		{"---\nname: a--b\ndescription: b\n---\n", "'--'"},
		{"---\nname: " + strings.Repeat("a", 65) + "\ndescription: b\n---\n", "limit 64"},
		{"---\nname: a\ndescription: " + strings.Repeat("b", 1025) + "\n---\n", "limit 1024"},
		{"---\nname: a\ndescription: [1, 2\n---\n", "not YAML"},
		{"---\nname: a\n---\n", "description is required"},
		{"---\ndescription: x\n---\n", "name is required"},
		{"---\n---\n", "name is required"},
		{"---\nname: a\ndescription: b\n---\n\xff", "not UTF-8"},
		{"---\nname: a\ndescription: b\nx: " + strings.Repeat("y", MaxFrontMatterBytes) + "\n---\n", "front matter is"},
	}
	for _, c := range cases {
		_, _, err := Parse([]byte(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", clip(c.in, 40), err)
			}
			continue
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", clip(c.in, 40), err, c.want)
		}
	}
	if _, _, err := Parse(make([]byte, MaxSkillFileBytes+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/upstream/*/SKILL.md")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	for _, s := range []string{"---\n---\n", "---\nname: &a [*a]\ndescription: x\n---\n", "---\nname: a\ndescription: !!binary aGk=\n---\n", "---\r\nname: a\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, body, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		if CheckName(m.Name) != nil || m.Description == "" || len([]rune(m.Description)) > MaxDescriptionLen {
			t.Fatalf("accepted invalid meta %+v", m)
		}
		if len(body) > len(b) {
			t.Fatal("body longer than the input")
		}
	})
}

func BenchmarkParse(b *testing.B) {
	data, _ := os.ReadFile("testdata/upstream/pdf-forms/SKILL.md")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
