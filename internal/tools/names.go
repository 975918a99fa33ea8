package tools

import (
	"errors"
	"fmt"
)

// ErrInvalidToolName is a tool name chat-completions APIs would refuse;
// match with errors.Is.
var ErrInvalidToolName = errors.New("tools: invalid tool name")

// maxToolName is the longest tool name chat-completions APIs accept.
const maxToolName = 64

// ValidateToolName reports whether name is 1–64 ASCII letters, digits,
// '_' or '-'. The error wraps ErrInvalidToolName and quotes the name.
func ValidateToolName(name string) error {
	if name == "" || len(name) > maxToolName {
		return fmt.Errorf("%w: %q has %d bytes, want 1 to %d", ErrInvalidToolName, name, len(name), maxToolName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%w: %q has byte %q at offset %d; allowed are ASCII letters, digits, '_' and '-'", ErrInvalidToolName, name, c, i)
		}
	}
	return nil
}
