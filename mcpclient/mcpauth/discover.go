package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/odekrun/odek/mcpclient"
)

// MaxMetadataBytes bounds one metadata or registration document read from
// a server; a larger one is an error naming the limit.
const MaxMetadataBytes = 64 << 10

// ResourceMetadata is the part of an RFC 9728 protected-resource metadata
// document odek uses.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// ServerMetadata is the part of an RFC 8414 authorization-server metadata
// document odek uses.
type ServerMetadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	RevocationEndpoint            string   `json:"revocation_endpoint"`
	ResponseTypesSupported        []string `json:"response_types_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	ScopesSupported               []string `json:"scopes_supported"`
}

// Discovery is what Discover found for one MCP server.
type Discovery struct {
	// Resource is the canonical URI of the MCP server, sent as the RFC
	// 8707 resource parameter.
	Resource string
	// Scopes to request: the 401 challenge's scope, else the resource's
	// scopes_supported (may be empty).
	Scopes []string
	Server ServerMetadata
}

// Challenge is a parsed WWW-Authenticate Bearer challenge.
type Challenge struct {
	ResourceMetadata string
	Scope            string
}

// ParseChallenge reads the Bearer challenge of a WWW-Authenticate value
// (RFC 6750 §3, RFC 9728 §5.1): auth-params resource_metadata and scope.
// Other schemes and unknown params are ignored; malformed input yields
// what parsed before the fault. It never fails: the challenge is a hint.
func ParseChallenge(h string) Challenge {
	var c Challenge
	s := h
	for len(s) > 0 {
		// scheme token
		s = strings.TrimLeft(s, " ,")
		i := strings.IndexAny(s, " ,")
		if i < 0 {
			return c
		}
		scheme := s[:i]
		s = s[i:]
		bearer := strings.EqualFold(scheme, "Bearer")
		// params until the next scheme (a token not followed by '=')
		for {
			s = strings.TrimLeft(s, " ,")
			eq := strings.IndexByte(s, '=')
			sp := strings.IndexAny(s, " ,")
			if eq < 0 || (sp >= 0 && sp < eq) {
				break // next scheme or end
			}
			name := strings.ToLower(strings.TrimSpace(s[:eq]))
			s = s[eq+1:]
			var val string
			if strings.HasPrefix(s, `"`) {
				var b strings.Builder
				j := 1
				for ; j < len(s); j++ {
					if s[j] == '\\' && j+1 < len(s) {
						j++
						b.WriteByte(s[j])
						continue
					}
					if s[j] == '"' {
						break
					}
					b.WriteByte(s[j])
				}
				if j >= len(s) {
					return c // unterminated
				}
				val, s = b.String(), s[j+1:]
			} else {
				k := strings.IndexAny(s, " ,")
				if k < 0 {
					k = len(s)
				}
				val, s = s[:k], s[k:]
			}
			if bearer {
				switch name {
				case "resource_metadata":
					c.ResourceMetadata = val
				case "scope":
					c.Scope = val
				}
			}
		}
	}
	return c
}

// checkEndpoint applies the URL rules to a URL a server handed us: https
// (http only to loopback), a host, no credentials, no fragment.
func checkEndpoint(field, raw string) error {
	if err := mcpclient.CheckURL(raw, false); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrDiscovery, field, mcpclient.RedactURL(raw), err)
	}
	return nil
}

// CanonicalResource is the canonical URI of an MCP server URL (the MCP
// authorization spec, RFC 8707): lower-case scheme and host, no fragment,
// no trailing slash on the path, no query.
func CanonicalResource(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: server url does not parse", ErrDiscovery)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment, u.RawQuery = "", "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// resourceCovers reports whether the metadata's resource identifier names
// the server: the same origin, and a path equal to the server's or a
// parent of it on a segment boundary.
func resourceCovers(resource, server string) bool {
	r, err1 := CanonicalResource(resource)
	s, err2 := CanonicalResource(server)
	if err1 != nil || err2 != nil {
		return false
	}
	return r == s || strings.HasPrefix(s, r+"/")
}

// wellKnown builds origin + "/.well-known/<name>" + path (RFC 8414 §3 /
// RFC 9728 §3.1 insertion).
func wellKnown(u *url.URL, name string) string {
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/" + name + p
}

// getJSON GETs raw and decodes a JSON object of at most MaxMetadataBytes
// into v. found is false for 404 (try the next location).
func getJSON(ctx context.Context, hc *http.Client, raw string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", mcpclient.ProtocolVersion)
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("%w: GET %s: %v", ErrDiscovery, mcpclient.RedactURL(raw), unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || (resp.StatusCode >= 400 && resp.StatusCode < 500) {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%w: GET %s answered HTTP %d", ErrDiscovery, mcpclient.RedactURL(raw), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataBytes+1))
	if err != nil {
		return false, fmt.Errorf("%w: GET %s: %v", ErrDiscovery, mcpclient.RedactURL(raw), err)
	}
	if len(b) > MaxMetadataBytes {
		return false, fmt.Errorf("%w: %s is larger than %d bytes (limit MaxMetadataBytes)", ErrDiscovery, mcpclient.RedactURL(raw), MaxMetadataBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%w: %s is not a JSON object: %v", ErrDiscovery, mcpclient.RedactURL(raw), err)
	}
	return true, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// probe sends an unauthenticated initialize to the MCP server and returns
// its WWW-Authenticate challenge when it answers 401.
func probe(ctx context.Context, hc *http.Client, serverURL string) (Challenge, bool, error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + mcpclient.ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"odek","version":"login"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return Challenge{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return Challenge{}, false, fmt.Errorf("%w: probing %s: %v", ErrDiscovery, mcpclient.RedactURL(serverURL), unwrapURLError(err))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return Challenge{}, false, nil
	}
	return ParseChallenge(resp.Header.Get("WWW-Authenticate")), true, nil
}

// Discover finds the authorization server of the MCP server at serverURL
// as the MCP authorization spec orders it: an unauthenticated request for
// the 401 challenge; the protected-resource metadata (RFC 9728) from the
// challenge's resource_metadata or the well-known URIs (path-inserted,
// then root); its first authorization server's metadata (RFC 8414 then
// OpenID discovery, path-inserted forms first). A server without
// protected-resource metadata is treated as its own authorization server
// (the 2025-03-26 revision). The metadata must name the server as its
// resource, the issuer must match, every endpoint must be https (http
// only to loopback), and S256 PKCE must be advertised: otherwise an error
// wrapping ErrDiscovery names what failed.
func Discover(ctx context.Context, hc *http.Client, serverURL string) (*Discovery, error) {
	if hc == nil {
		hc = HTTPClient()
	}
	if err := checkEndpoint("server url", serverURL); err != nil {
		return nil, err
	}
	resource, err := CanonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	ch, _, err := probe(ctx, hc, serverURL)
	if err != nil {
		return nil, err
	}
	su, _ := url.Parse(serverURL)
	var cands []string
	if ch.ResourceMetadata != "" {
		if err := checkEndpoint("resource_metadata", ch.ResourceMetadata); err != nil {
			return nil, err
		}
		cands = append(cands, ch.ResourceMetadata)
	}
	cands = append(cands, wellKnown(su, "oauth-protected-resource"))
	if root := su.Scheme + "://" + su.Host + "/.well-known/oauth-protected-resource"; root != cands[len(cands)-1] {
		cands = append(cands, root)
	}
	var prm ResourceMetadata
	var found bool
	for _, c := range cands {
		if found, err = getJSON(ctx, hc, c, &prm); err != nil {
			return nil, err
		} else if found {
			break
		}
	}
	d := &Discovery{Resource: resource}
	issuer := su.Scheme + "://" + su.Host // 2025-03-26: the server is its own AS
	if found {
		if prm.Resource == "" || !resourceCovers(prm.Resource, serverURL) {
			return nil, fmt.Errorf("%w: protected-resource metadata names resource %q, not this server (%s)", ErrDiscovery, clip(prm.Resource), mcpclient.RedactURL(serverURL))
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("%w: protected-resource metadata lists no authorization_servers", ErrDiscovery)
		}
		issuer = prm.AuthorizationServers[0]
		d.Scopes = prm.ScopesSupported
	}
	if ch.Scope != "" {
		d.Scopes = strings.Fields(ch.Scope)
	}
	if err := checkEndpoint("authorization server", issuer); err != nil {
		return nil, err
	}
	iu, _ := url.Parse(issuer)
	var asCands []string
	if p := strings.TrimSuffix(iu.EscapedPath(), "/"); p != "" {
		asCands = []string{
			wellKnown(iu, "oauth-authorization-server"),
			wellKnown(iu, "openid-configuration"),
			iu.Scheme + "://" + iu.Host + p + "/.well-known/openid-configuration",
		}
	} else {
		asCands = []string{wellKnown(iu, "oauth-authorization-server"), wellKnown(iu, "openid-configuration")}
	}
	found = false
	for _, c := range asCands {
		if found, err = getJSON(ctx, hc, c, &d.Server); err != nil {
			return nil, err
		} else if found {
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: authorization server %s publishes no metadata (tried %s)", ErrDiscovery, mcpclient.RedactURL(issuer), strings.Join(asCands, ", "))
	}
	if err := CheckServerMetadata(&d.Server, issuer); err != nil {
		return nil, err
	}
	return d, nil
}

// CheckServerMetadata validates authorization-server metadata fetched for
// issuer: the issuer matches (RFC 8414 §3.3), the endpoints odek uses are
// present and pass the URL rules, the code flow and S256 PKCE are
// supported (the MCP spec: a client must refuse a server that does not
// advertise PKCE). A pure function.
func CheckServerMetadata(m *ServerMetadata, issuer string) error {
	if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return fmt.Errorf("%w: metadata issuer %q is not the authorization server %q", ErrDiscovery, clip(m.Issuer), clip(issuer))
	}
	if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
		return fmt.Errorf("%w: metadata lacks authorization_endpoint or token_endpoint", ErrDiscovery)
	}
	for _, e := range []struct{ f, v string }{
		{"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint}, {"revocation_endpoint", m.RevocationEndpoint},
	} {
		if e.v == "" {
			continue
		}
		if err := checkEndpoint(e.f, e.v); err != nil {
			return err
		}
	}
	if len(m.ResponseTypesSupported) > 0 && !slices.Contains(m.ResponseTypesSupported, "code") {
		return fmt.Errorf("%w: authorization server does not support response_type code", ErrDiscovery)
	}
	if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("%w: authorization server does not advertise S256 PKCE (code_challenge_methods_supported); odek refuses to log in without it", ErrDiscovery)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
