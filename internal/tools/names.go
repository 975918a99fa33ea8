package tools

import "github.com/odekrun/odek/agent"

// ErrInvalidToolName is agent's: a tool name chat-completions APIs would
// refuse; match with errors.Is.
var ErrInvalidToolName = agent.ErrInvalidToolName

// ValidateToolName is agent.ValidateToolName: 1–64 ASCII letters, digits,
// '_' or '-'.
func ValidateToolName(name string) error { return agent.ValidateToolName(name) }
