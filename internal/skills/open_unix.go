//go:build unix

package skills

import "syscall"

// openFlags makes opening a FIFO planted in a skill's directory return at
// once instead of blocking the caller; ReadFile then refuses it as not a
// regular file.
const openFlags = syscall.O_NONBLOCK
