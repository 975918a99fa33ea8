package ext

import (
	"errors"
	"fmt"
)

// Sentinel errors; match with errors.Is.
var (
	// ErrConfig: an mcp_servers section or one server entry in it is
	// unusable. A server with such an entry is not started.
	ErrConfig = errors.New("ext: invalid mcp_servers config")
	// ErrRequiredServer: a server marked required could not be loaded
	// (config error, not approved, failed to start). Load fails with it.
	ErrRequiredServer = errors.New("ext: required MCP server not loaded")
	// ErrToolCollision: an MCP tool's qualified name equals a built-in
	// tool's name or another MCP tool's qualified name.
	ErrToolCollision = errors.New("ext: MCP tool name collision")
	// ErrApprovals: the approvals file is unusable (malformed, too big,
	// unsafe permissions). It is then ignored: nothing counts as approved.
	ErrApprovals = errors.New("ext: approvals file unusable")
)

// ServerError reports one server that could not be loaded: which server,
// at which phase ("config", "approval", "start", "tools") and why. Its text
// never contains environment values.
type ServerError struct {
	Server string
	Phase  string
	Err    error
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("ext: MCP server %q (%s): %v", e.Server, e.Phase, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }
