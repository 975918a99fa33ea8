// Package mcpauth is odek's OAuth 2.1 client for remote (Streamable HTTP)
// MCP servers, as the MCP authorization spec describes it: discovery of
// the protected-resource metadata (RFC 9728) and the authorization
// server's metadata (RFC 8414 / OpenID discovery), dynamic client
// registration (RFC 7591) or an operator-configured client id, the
// authorization-code flow with PKCE S256, a random state and the RFC 8707
// resource parameter, through a loopback redirect (RFC 8252) or, on a
// headless host, a printed URL whose redirected address the operator
// pastes back.
//
// Tokens live in the operator's store, one file per server under
// $ODEK_HOME/mcp-auth (0600 files in a 0700 directory; a file readable by
// others is refused). Source is the mcpclient.Authorizer that hands the
// stored access token to mcpclient and refreshes it with golang.org/x/oauth2
// when it expires or the server refuses it; a Source only hands out tokens
// issued for the URL it was built with. Token handling (exchange, refresh,
// expiry) is x/oauth2's; this package adds discovery, registration, the
// redirect listener, the resource parameter on refreshes and the store.
//
// Errors never carry a token or a token endpoint's response body: OAuth
// failures are reported by their error code only.
//
// Login, Logout and Register block on the network and take a ctx; Store
// and Source are safe for concurrent use (Source serialises refreshes in
// the process and, on Unix, across processes through a lock file).
package mcpauth
