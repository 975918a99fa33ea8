package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// MaxNameLen is the longest server, tool and qualified tool name (OpenAI
// function names are limited to 64 characters).
const MaxNameLen = 64

// Separator joins server and tool in a qualified name.
const Separator = "__"

// shortHashLen is the number of hex digits of SHA-256 in a shortened
// qualified name; 40 bits keep collisions negligible for thousands of tools
// and are checked by NameMap anyway.
const shortHashLen = 10

// ValidateName checks a server or tool name: 1–64 characters, ASCII
// letters, digits, '_' and '-' only, and no "__". The error wraps
// ErrInvalidName and says which rule failed.
func ValidateName(name string) error { return validateName(name, MaxNameLen, false) }

// validateName checks name against one of the two naming rules: at most
// max characters of ASCII letters, digits, '_', '-' (and '.' when dot),
// never the separator "__".
func validateName(name string, max int, dot bool) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > max:
		return fmt.Errorf("%w: %d characters, limit %d", ErrInvalidName, len(name), max)
	case strings.Contains(name, Separator):
		return fmt.Errorf("%w: %q contains %q (reserved as the server/tool separator)", ErrInvalidName, name, Separator)
	}
	allowed := "[A-Za-z0-9_-]"
	if dot {
		allowed = "[A-Za-z0-9_.-]"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || dot && c == '.') {
			return fmt.Errorf("%w: %q has a character outside %s at byte %d", ErrInvalidName, name, allowed, i)
		}
	}
	return nil
}

// MaxToolNameLen is the longest tool name a server may list (the
// 2025-11-25 naming guidance: 1–128 characters).
const MaxToolNameLen = 128

// ValidateToolName checks a tool name as a server lists it: 1–128
// characters of ASCII letters, digits, '_', '-' and '.' (the 2025-11-25
// guidance), without the contract's reserved separator "__". The
// qualified name the model sees still follows the contract's rule
// (ValidateName): MapToolName turns what it does not allow into '_' and
// QualifiedName shortens what is too long.
func ValidateToolName(name string) error { return validateName(name, MaxToolNameLen, true) }

// MapToolName returns a tool name valid per ValidateToolName in the
// contract's alphabet: every '.' becomes '_', and runs of '_' that would
// form the reserved "__" are reduced to one. Names the contract allows
// already are returned unchanged. Two tools of one server can map to one
// name ("a.b" and "a_b"); NameMap reports that as a collision.
func MapToolName(tool string) string {
	if ValidateName(tool) == nil {
		return tool
	}
	b := make([]byte, 0, len(tool))
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		if c == '.' {
			c = '_'
		}
		if c == '_' && len(b) > 0 && b[len(b)-1] == '_' {
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// QualifiedName is the name the model sees for a server's tool:
// server + "__" + MapToolName(tool) when that fits in MaxNameLen
// characters; otherwise the first 53 characters of it, then "_", then the
// first 10 hex digits of the SHA-256 of server + "__" + tool (the server's
// own tool name) — exactly 64 characters, deterministic, and still
// readable from the left. server must be valid (ValidateName) and tool
// valid per ValidateToolName; use a NameMap to map back and to detect
// collisions.
func QualifiedName(server, tool string) string {
	q := server + Separator + MapToolName(tool)
	if len(q) <= MaxNameLen {
		return q
	}
	sum := sha256.Sum256([]byte(server + Separator + tool))
	prefix := MaxNameLen - 1 - shortHashLen
	return q[:prefix] + "_" + hex.EncodeToString(sum[:])[:shortHashLen]
}

// ToolRef names one tool of one server.
type ToolRef struct {
	Server, Tool string
}

// NameMap maps qualified names back to (server, tool). The zero value is
// ready; it is safe for concurrent use.
type NameMap struct {
	mu sync.RWMutex
	m  map[string]ToolRef
}

// Add records server's tool and returns its qualified name. It fails with
// ErrInvalidName for an invalid server or tool name, and with
// ErrNameCollision when the qualified name is already taken by another
// pair. Adding the same pair twice returns the same name.
func (m *NameMap) Add(server, tool string) (string, error) {
	if err := ValidateName(server); err != nil {
		return "", fmt.Errorf("server name: %w", err)
	}
	if err := ValidateToolName(tool); err != nil {
		return "", fmt.Errorf("server %q: tool name: %w", server, err)
	}
	q := QualifiedName(server, tool)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]ToolRef)
	}
	if prev, ok := m.m[q]; ok && prev != (ToolRef{server, tool}) {
		return "", fmt.Errorf("%w: %q is server %q tool %q and server %q tool %q", ErrNameCollision, q, prev.Server, prev.Tool, server, tool)
	}
	m.m[q] = ToolRef{server, tool}
	return q, nil
}

// Resolve returns the (server, tool) behind a qualified name.
func (m *NameMap) Resolve(qualified string) (ToolRef, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.m[qualified]
	return r, ok
}
