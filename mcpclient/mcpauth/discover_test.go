package mcpauth

import (
	"errors"
	"strings"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	cases := []struct {
		in         string
		meta, scop string
	}{
		{`Bearer resource_metadata="https://a/.well-known/oauth-protected-resource", scope="x y"`, "https://a/.well-known/oauth-protected-resource", "x y"},
		{`Bearer error="invalid_token", resource_metadata="https://a/m"`, "https://a/m", ""},
		{`Basic realm="r", Bearer scope=files`, "", "files"},
		{`Basic resource_metadata="https://evil/m"`, "", ""}, // not the Bearer scheme
		{`Bearer resource_metadata="https://a/\"q\""`, `https://a/"q"`, ""},
		{`Bearer resource_metadata="unterminated`, "", ""},
		{``, "", ""},
		{`Bearer`, "", ""},
	}
	for _, c := range cases {
		got := ParseChallenge(c.in)
		if got.ResourceMetadata != c.meta || got.Scope != c.scop {
			t.Errorf("ParseChallenge(%q) = %+v, want meta %q scope %q", c.in, got, c.meta, c.scop)
		}
	}
}

func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{`Bearer resource_metadata="https://a/m", scope="x"`, `Basic realm="a", Bearer error="e"`, `Bearer a="\`, `,,, = "" ,`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := ParseChallenge(s)
		if len(c.ResourceMetadata) > len(s) || len(c.Scope) > len(s) {
			t.Fatalf("values longer than the input")
		}
	})
}

func TestCheckServerMetadata(t *testing.T) {
	good := func() ServerMetadata {
		return ServerMetadata{Issuer: "https://as.example", AuthorizationEndpoint: "https://as.example/a", TokenEndpoint: "https://as.example/t", CodeChallengeMethodsSupported: []string{"S256"}}
	}
	cases := []struct {
		name string
		mod  func(*ServerMetadata)
		want string
	}{
		{"ok", func(*ServerMetadata) {}, ""},
		{"issuer mismatch", func(m *ServerMetadata) { m.Issuer = "https://other.example" }, "issuer"},
		{"no pkce", func(m *ServerMetadata) { m.CodeChallengeMethodsSupported = nil }, "S256"},
		{"plain only", func(m *ServerMetadata) { m.CodeChallengeMethodsSupported = []string{"plain"} }, "S256"},
		{"http token endpoint", func(m *ServerMetadata) { m.TokenEndpoint = "http://as.example/t" }, "token_endpoint"},
		{"no token endpoint", func(m *ServerMetadata) { m.TokenEndpoint = "" }, "token_endpoint"},
		{"no code flow", func(m *ServerMetadata) { m.ResponseTypesSupported = []string{"token"} }, "response_type"},
		{"creds in url", func(m *ServerMetadata) { m.AuthorizationEndpoint = "https://u:p@as.example/a" }, "authorization_endpoint"},
	}
	for _, c := range cases {
		m := good()
		c.mod(&m)
		err := CheckServerMetadata(&m, "https://as.example")
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrDiscovery) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

func TestResourceCovers(t *testing.T) {
	cases := []struct {
		res, srv string
		want     bool
	}{
		{"https://a.example/mcp", "https://a.example/mcp", true},
		{"https://A.example/mcp/", "https://a.example/mcp", true},
		{"https://a.example", "https://a.example/mcp", true},
		{"https://a.example/m", "https://a.example/mcp", false},
		{"https://b.example/mcp", "https://a.example/mcp", false},
		{"http://a.example/mcp", "https://a.example/mcp", false},
	}
	for _, c := range cases {
		if got := resourceCovers(c.res, c.srv); got != c.want {
			t.Errorf("resourceCovers(%q, %q) = %v", c.res, c.srv, got)
		}
	}
}
