// Package tools holds odek's built-in tools, danger classes with the shell
// command classifier, and the approval policy.
//
// Builtins returns read_file, write_file, list_dir, search_files, patch and
// shell, configured by Options (usable at its zero value). Every tool's
// Assess depends only on its arguments and the symlinks that exist in the
// working directory (a write through one into .git is code_execution);
// ClassifyShell, Severity, Policy.Decide and Clip are pure and
// table-tested. The shell runs every command with the git guard
// (gitguard.go). Authorize joins a Policy with a Prompter;
// NewTTYPrompter asks on /dev/tty.
//
// Concurrency: tools, ClassifyShell and Authorize are safe for
// concurrent use; the TTY prompter serialises its prompts.
//
// Ownership: the shell tool owns the process group it starts and kills it
// on timeout or cancellation; file tools hold no open files between calls,
// open only regular files and directories (never blocking in open: see
// guarded), and read at most MaxReadScanBytes, MaxPatchBytes or
// MaxSearchBytes per call, looking at the context every 64 KiB.
// Results are plain strings owned by the caller, who clips and redacts
// them before they reach the model.
package tools

import "github.com/odekrun/odek/agent"

// The tool types are the agent package's: a tool written for odek's Go API
// and a built-in one are the same thing.
type (
	// Class is the danger class of one tool call.
	Class = agent.Class
	// Definition is what the model is told about a tool.
	Definition = agent.Definition
	// Assessment is the pre-execution view of one call.
	Assessment = agent.Assessment
	// Result is what a tool call returns to the model.
	Result = agent.ToolResult
	// Tool is one callable tool.
	Tool = agent.Tool
)

// Danger classes, from harmless to forbidden.
const (
	ClassSafe          = agent.ClassSafe
	ClassLocalWrite    = agent.ClassLocalWrite
	ClassSystemWrite   = agent.ClassSystemWrite
	ClassDestructive   = agent.ClassDestructive
	ClassCodeExecution = agent.ClassCodeExecution
	ClassNetworkEgress = agent.ClassNetworkEgress
	ClassInstall       = agent.ClassInstall
	ClassUnknown       = agent.ClassUnknown
	ClassBlocked       = agent.ClassBlocked
)
