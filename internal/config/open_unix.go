//go:build unix

package config

import "syscall"

// openFlags makes opening a FIFO planted at a config path return at once
// instead of blocking; readFile then rejects it as not a regular file.
const openFlags = syscall.O_NONBLOCK
