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
// A Jail starts a job's commands and ends them with the job. Go cannot
// run code between fork and exec, so the Jail confines one OS thread per
// job instead, once (no_new_privs, landlock_restrict_self and a seccomp
// filter, each bound to that thread only, and no capabilities), and forks
// every command of the job from it: the commands share one Landlock
// domain, odek does not enter it. Close (the job's end) makes that thread
// call kill(-1, SIGKILL), which Landlock's signal scoping (ABI 6) limits
// to the domain: every process of the job dies, whatever it did to leave
// its session, and nothing else. Each command starts in a session of its
// own, without a controlling terminal, and stopped at its exec (ptrace)
// until its resource limits are set with prlimit(2). The seccomp filter
// closes what Landlock's TCP rules do not see: a socket(2) allowlist (TCP,
// UDP, ping), TCP Fast Open, listen(2) without a granted port, Multipath
// TCP, io_uring, foreign syscall ABIs, terminal input injection. Without
// signal scoping the Jail starts each command through odek re-executed as
// a small helper (Command, HelperArg), which applies the limits, the
// ruleset and the filter to itself in a session it cannot leave, and
// kills those sessions' groups at Close; Main must run first in every
// binary that may be re-executed so. Either way enforcement fails closed:
// if a step fails the command is not run. Verify proves both ways of
// confining on the running machine.
//
// ABI reports the kernel's Landlock ABI; RequiredABI is what the sandbox
// needs. The filesystem rules come from github.com/landlock-lsm/go-landlock.
//
// Concurrency and ownership: every function is safe for concurrent use.
// Specs are plain values; the caller creates and removes the directories
// a Spec names.
package sandbox
