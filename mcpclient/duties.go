package mcpclient

import (
	"encoding/json"
	"net/url"
	"path/filepath"
)

// This file holds the client's side of the protocol: what odek answers to
// the requests a server sends it, and what it does with the server's
// notifications.

// maxServerRequestParams bounds the params of a server→client request kept
// for its answer; larger params are dropped (no answer odek gives reads
// them beyond a few fields).
const maxServerRequestParams = 64 << 10

// Messages of the refusals odek answers with.
const (
	// SamplingRefusal is the message of the error answer (code -1, the
	// spec's "user rejected" code) to sampling/createMessage: odek never
	// lets a server borrow its model.
	SamplingRefusal = "odek does not offer sampling: the request was rejected (odek's model is not available to MCP servers)"
)

// elicitationDecline is odek's answer to elicitation/create: the spec's
// "decline" action, so the server learns it will get no input.
var elicitationDecline = []byte(`{"action":"decline"}`)

// answer implements serverHandler for one connection of c.
func (c *Client) answer(b, rawID []byte, method string, params []byte) []byte {
	switch method {
	case "ping":
		// MCP: the receiver MUST answer ping promptly with an empty result.
		return appendResultAnswer(b, rawID, []byte("{}"))
	case "roots/list":
		if c.cfg.Roots == nil {
			break // the capability was not advertised
		}
		return appendResultAnswer(b, rawID, rootsResult(c.cfg.Roots()))
	case "sampling/createMessage":
		return appendErrorAnswer(b, rawID, -1, SamplingRefusal)
	case "elicitation/create":
		return appendResultAnswer(b, rawID, elicitationDecline)
	}
	return appendMethodNotFound(b, rawID, method)
}

// notified implements serverHandler: progress goes to the call's
// callback, a changed tool list is re-listed in the background, anything
// else is skipped.
func (c *Client) notified(method string, params []byte) {
	switch method {
	case "notifications/progress":
		c.progress(params)
	case "notifications/tools/list_changed":
		c.toolsChanged()
	default:
		c.log.WithField("method", clipDisplay(method, 64)).Debug("server notification skipped")
	}
}

// Root is one entry of the roots/list answer.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// rootsResult is the roots/list result for dirs: one file:// root per
// absolute directory (others are left out: a root must be a file URI).
func rootsResult(dirs []string) []byte {
	roots := make([]Root, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(d)}
		roots = append(roots, Root{URI: u.String(), Name: filepath.Base(d)})
	}
	b, _ := json.Marshal(map[string]any{"roots": roots})
	return b
}

// clientCapabilities are the capabilities odek declares in initialize:
// roots (with listChanged) when the config supplies them, nothing else.
// Sampling and elicitation are not declared: requests for them are
// refused anyway.
func (c *Client) clientCapabilities() map[string]any {
	caps := map[string]any{}
	if c.cfg.Roots != nil {
		caps["roots"] = map[string]any{"listChanged": true}
	}
	return caps
}
