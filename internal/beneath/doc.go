// Package beneath opens and creates files inside a directory that
// somebody less trusted can write — a chat's directory, written by the
// chat's confined jobs — from a process that is not confined (the worker,
// a sub-agent's odek process, the bot).
//
// Such a process must never resolve a path inside that directory by name:
// between a check and a use the chat can swap any component for a
// symbolic link to another chat's directory, to ODEK_HOME, or for a FIFO
// that blocks the reader for ever. So a Dir is opened once, and every name
// below it is resolved by the kernel relative to that descriptor, with no
// symbolic link followed at any component and no ".." (on Linux one
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS;
// where openat2 is missing, one openat with O_NOFOLLOW per component,
// which is as strict). Files are opened O_NOFOLLOW|O_NONBLOCK, so a FIFO
// or device never blocks the open, and are refused unless fstat on the
// same descriptor says they are regular files. Callers validate and use
// the same descriptor: what is checked (type, size, hash) is what is read.
//
// Only the path given to OpenDir is resolved by name; it must be a path no
// tenant can change (a directory the operator owns, such as the chats'
// parent directory or the worker's private state directory).
//
// A Dir is safe for concurrent use; whoever opens one closes it.
package beneath
