package llm

import "net/http"

// DefaultTransportOf returns the transport New gave c (nil if the caller
// supplied its own HTTP client with another transport).
func DefaultTransportOf(c *Client) *http.Transport {
	tr, _ := c.hc.Transport.(*http.Transport)
	return tr
}
