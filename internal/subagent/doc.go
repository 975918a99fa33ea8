// Package subagent runs focused tasks as separate odek processes: the
// `delegate_tasks` tool a model calls to fan work out, the task envelope
// and result it exchanges with the `odek subagent` child, the child-side
// runner that turns a task into one agent run, budget inheritance between
// parent and child, and the result-artifact channel.
//
// # Parent side
//
// Delegate (the delegate_tasks tool) validates 1–MaxTasks tasks, creates a
// 0700 artifact root per task under <ArtifactsDir>/<session or run>/<task_id>/
// (for a confined run ArtifactsDir is a private directory outside the
// chat's root, PrivateArtifactsDir), writes a 0600 task file, and starts
// `odek subagent --task FILE --api-key-fd 3` per task in its own process
// group, at most MaxConcurrency at a time per call and at most
// MaxProcesses at a time in the whole process tree (flock'd slot files
// named to children in SlotsEnv; a top-level task waits for a slot, a
// nested one is refused with ErrProcessCap). A task that has to wait emits
// subagent_concurrency_wait. The API key travels through an inherited
// pipe (fd 3), never through the child's environment or argv; the child's
// depth travels in ODEK_SUBAGENT_DEPTH. Each child has a timeout; when it
// passes, or the parent's context ends, the whole process group is killed.
// Every child's usage is added to the parent's budget tracker. Results are
// rendered for the model with the child's summary inside the untrusted
// boundary, one metadata line per artifact, text artifacts of at most
// InlineMaxBytes inlined (untrusted) and the rest registered for
// artifact_read. Artifact refs are validated fail closed against the
// task's own root; paths never reach the model.
//
// # Child side
//
// ParseTask reads the size-capped task file (unknown fields ignored);
// Task.Budget.Limits clamps the operator limits by what the parent had left
// and fails fast with a *budget.ExceededError for an exhausted dimension.
// RunTask runs the agent with a policy that never prompts (every denial is
// collected), then copies the files the model staged in its workspace into
// the artifact root, hashing the bytes it copies. The workspace may be a
// chat's directory that the chat writes concurrently, so staging is made,
// walked, read and removed only through descriptors (package beneath),
// never by name.
//
// # Concurrency and ownership
//
// Delegate is safe for concurrent calls; each call owns the child
// processes it starts and waits for all of them (killing the stragglers'
// process groups) before it returns. The decision functions (ParseTask,
// ParseTasks, ParseSettings, Budget.Inherit, Remaining, ChildPolicy,
// DepthFromEnviron, Result.ExitCode) are pure and table-tested.
package subagent
