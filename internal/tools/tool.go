// Package tools holds odek's built-in tools, danger classes with the shell
// command classifier, and the approval policy.
//
// Builtins returns read_file, write_file, list_dir, search_files, patch and
// shell, configured by Options (usable at its zero value). Every tool's
// Assess is a pure function of its arguments; ClassifyShell, Severity,
// Policy.Decide and Clip are pure and table-tested. Authorize joins a
// Policy with a Prompter; NewTTYPrompter asks on /dev/tty.
//
// Concurrency: tools, ClassifyShell and Authorize are safe for
// concurrent use; the TTY prompter serialises its prompts.
//
// Ownership: the shell tool owns the process group it starts and kills it
// on timeout or cancellation; file tools hold no open files between calls.
// Results are plain strings owned by the caller, who clips and redacts
// them before they reach the model.
package tools

import (
	"context"
	"encoding/json"
)

// Class is the danger class of one tool call.
type Class string

// Danger classes, from harmless to forbidden.
const (
	ClassSafe          Class = "safe"
	ClassLocalWrite    Class = "local_write"
	ClassSystemWrite   Class = "system_write"
	ClassDestructive   Class = "destructive"
	ClassCodeExecution Class = "code_execution"
	ClassNetworkEgress Class = "network_egress"
	ClassInstall       Class = "install"
	ClassUnknown       Class = "unknown"
	ClassBlocked       Class = "blocked"
)

// Definition is what the model is told about a tool.
type Definition struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object describing the arguments.
	Parameters json.RawMessage
}

// Assessment is the pre-execution view of one call: its danger class and
// a low-cardinality audit summary (for events: shell → argv0 and class;
// path tools → path and class; network tools → host and class). Summary
// values are plain strings or string slices; they never hold raw content.
type Assessment struct {
	Class   Class
	Summary map[string]any
}

// Result is what a tool call returns to the model.
type Result struct {
	// Text is shown to the model (after clipping and redaction by the
	// caller).
	Text string
	// IsError marks a failed call; Text then explains the failure.
	IsError bool
	// ArtifactCount is the number of artifact refs the result carried.
	ArtifactCount int
}

// Tool is one callable tool. Implementations must be safe for concurrent
// calls. Assess must not have side effects. Run receives arguments that are
// valid JSON; it reports failures the model should see as a Result with
// IsError, and returns a Go error only for failures of the call itself
// (cancellation, I/O), which the agent also turns into an error result.
type Tool interface {
	Definition() Definition
	Assess(args json.RawMessage) (Assessment, error)
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}
