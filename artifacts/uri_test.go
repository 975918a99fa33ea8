package artifacts

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFileURI(t *testing.T) {
	tests := []struct {
		uri  string
		want string // "" ⇒ ErrBadURI
	}{
		{"file:///var/ci/report.xml", "/var/ci/report.xml"},
		{"file://localhost/var/ci/report.xml", "/var/ci/report.xml"},
		{"FILE://LocalHost/var/x", "/var/x"},
		{"file:///a%20b/c%C3%A9.txt", "/a b/cé.txt"},
		{"file:///a b/c.txt", "/a b/c.txt"},
		{"file:///", "/"},
		{"file:///var/../etc/passwd", ""},
		{"file:///var/%2e%2e/etc/passwd", ""},
		{"file:///var/%2E%2E/etc/passwd", ""},
		{"file:///var/./x", ""},
		{"file:///var/%2e/x", ""},
		{"file:///var//x", ""},
		{"file:///var/x/", ""},
		{"file:///var/x/..", ""},
		{"file:///var%2Fx", ""},
		{"file:///var/x%00.txt", ""},
		{"file:///var/x\x00.txt", ""},
		{"file:///var/x\n.txt", ""},
		{"file:///var/x%0a", ""},
		{"file:///var/x%", ""},
		{"file:///var/x%4", ""},
		{"file:///var/x%zz", ""},
		{"file:///var/x?y=1", ""},
		{"file:///var/x#frag", ""},
		{"file://evil.example/var/x", ""},
		{"file://localhost:80/var/x", ""},
		{"file://user@localhost/var/x", ""},
		{"file:var/x", ""},
		{"file:/var/x", ""},
		{"file://", ""},
		{"file://localhost", ""},
		{"http://localhost/var/x", ""},
		{"/var/x", ""},
		{"", ""},
		{"file:///" + strings.Repeat("a", MaxURIBytes), ""},
	}
	for _, tt := range tests {
		got, err := ParseFileURI(tt.uri)
		if tt.want == "" {
			if !errors.Is(err, ErrBadURI) {
				t.Errorf("ParseFileURI(%q) = %q, %v; want ErrBadURI", tt.uri, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseFileURI(%q) = %q, %v; want %q", tt.uri, got, err, tt.want)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		root, p string
		want    bool
	}{
		{"/data", "/data", true},
		{"/data", "/data/x", true},
		{"/data", "/data/x/y", true},
		{"/data", "/data2", false},
		{"/data", "/data2/x", false},
		{"/data", "/dat", false},
		{"/data", "/", false},
		{"/", "/anything", true},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := within(tt.root, tt.p); got != tt.want {
			t.Errorf("within(%q, %q) = %v, want %v", tt.root, tt.p, got, tt.want)
		}
	}
}
