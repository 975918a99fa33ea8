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
// A Jail starts a job's commands and ends them with the job. Each command
// starts through odek re-executed as a small helper (Command, HelperArg),
// which puts itself in a session of its own without a controlling
// terminal, applies the Landlock ruleset, the seccomp filter and the
// resource limits to itself, drops every capability and becomes the
// command; Main must run first in every binary that may be re-executed
// so. A shell call (Jail.Run) goes instead, where the job has a cgroup,
// through the job's supervisor (SuperviseArg, supervisor_linux.go): the
// helper binary started once per job, confined once the same way, which
// forks each call's command from its confined thread. Where the process can make cgroups with the pids controller, each
// Jail has a cgroup of its own (cgroup_linux.go) that the helper joins
// first: pids.max bounds the job's processes (root included), and Close
// kills the cgroup. The filter refuses setsid(2) and setpgid(2), so
// nothing a command starts can leave its process group, and without a
// cgroup Close (the job's end) kills every group. No thread of odek is ever in a job's Landlock domain. The
// filter also closes what Landlock does not see: a socket(2) allowlist
// (TCP; UDP and ping only when a connect port is granted), TCP Fast Open, listen(2) without a granted port,
// Multipath TCP, io_uring, other processes' memory and descriptors
// (process_vm_*, pidfd_getfd, ptrace), System V IPC, foreign syscall ABIs
// and terminal input injection. Enforcement fails closed: if a step fails
// the command is not run. Verify proves it on the running machine.
//
// ABI reports the kernel's Landlock ABI; RequiredABI is what the sandbox
// needs. The filesystem rules come from github.com/landlock-lsm/go-landlock.
//
// Concurrency and ownership: every function is safe for concurrent use.
// Specs are plain values; the caller creates and removes the directories
// a Spec names.
package sandbox
