// Package sandbox confines the processes a job starts to the job's own
// directory with Landlock, enforced by the kernel.
//
// A job's ruleset is a Spec, built by the pure function NewSpec from the
// `sandbox` settings (FromSections merges the operator's and the
// project's sections; a project may only tighten) and the job's paths:
// read-write on the job's root and a private temp dir, read-and-execute on
// the system paths a shell needs (SystemReadOnly without SystemDeny and
// odek's own directories), a few device files, and TCP connect only to the
// listed ports. Nothing else is reachable: not other chats' directories,
// not ODEK_HOME, not /proc.
//
// Go cannot apply a ruleset between fork and exec, so a confined command
// is odek re-executed as a small helper (Command, HelperArg): the helper
// sets the resource limits, applies the Landlock ruleset and a seccomp
// filter that closes the known ways around Landlock's TCP rules
// (Multipath TCP sockets, io_uring, foreign syscall ABIs), and then
// executes the command. Main must run first in every binary that spawns
// confined commands. Enforcement fails closed: if any step fails the
// command is not run (ExitNotConfined).
//
// ABI reports the kernel's Landlock ABI; RequiredABI is what the sandbox
// needs. The filesystem rules come from github.com/landlock-lsm/go-landlock.
//
// Concurrency and ownership: every function is safe for concurrent use.
// Specs are plain values; the caller creates and removes the directories
// a Spec names.
package sandbox
