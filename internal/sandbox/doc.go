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
// A Jail starts a job's commands. Go cannot run code between fork and
// exec, so the Jail confines a fresh OS thread instead (no_new_privs,
// landlock_restrict_self and a seccomp filter, each bound to that thread
// only), forks the command from it, and lets the thread die with its
// goroutine: the command inherits the confinement, odek does not, and a
// confined start costs about a tenth of a millisecond. The seccomp filter
// closes the known ways around Landlock's TCP rules (Multipath TCP
// sockets, io_uring, foreign syscall ABIs). Resource limits belong to a
// whole process, so a spec with limits starts its commands through odek
// re-executed as a small helper (Command, HelperArg), which applies the
// limits, the ruleset and the filter to itself and then executes the
// command; Main must run first in every binary that may be re-executed
// so. Either way enforcement fails closed: if a step fails the command is
// not run. Verify proves both ways on the running machine.
//
// ABI reports the kernel's Landlock ABI; RequiredABI is what the sandbox
// needs. The filesystem rules come from github.com/landlock-lsm/go-landlock.
//
// Concurrency and ownership: every function is safe for concurrent use.
// Specs are plain values; the caller creates and removes the directories
// a Spec names.
package sandbox
