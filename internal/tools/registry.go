package tools

import (
	"errors"
	"fmt"
	"sync"
)

// Registry errors; match with errors.Is.
var (
	ErrDuplicateTool   = errors.New("tools: duplicate tool name")
	ErrInvalidToolName = errors.New("tools: invalid tool name")
	ErrNilTool         = errors.New("tools: nil tool")
)

// maxToolName is the longest tool name chat-completions APIs accept.
const maxToolName = 64

// Registry holds tools by name in the order they were added. It is safe
// for concurrent use; tools, once added, are never removed.
type Registry struct {
	mu    sync.RWMutex
	byKey map[string]Tool
	order []Tool
}

// NewRegistry returns a registry holding ts, in order. It fails on the
// first nil tool, invalid name or duplicate name.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{byKey: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers t under t.Definition().Name. Names are 1–64 ASCII
// letters, digits, '_' or '-'; a name already present is rejected.
func (r *Registry) Add(t Tool) error {
	if t == nil {
		return ErrNilTool
	}
	name := t.Definition().Name
	if err := ValidateToolName(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = make(map[string]Tool)
	}
	if _, dup := r.byKey[name]; dup {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicateTool, name)
	}
	r.byKey[name] = t
	r.order = append(r.order, t)
	return nil
}

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

// Get returns the tool named name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byKey[name]
	return t, ok
}

// Definitions returns the definitions of all tools in the order they were
// added. The slice is fresh; the caller may keep it.
func (r *Registry) Definitions() []Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Definition, len(r.order))
	for i, t := range r.order {
		out[i] = t.Definition()
	}
	return out
}

// Len returns the number of registered tools.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.order)
}
