//go:build unix

package tools

import "syscall"

// openGuard is added to every open a file tool makes (see guarded):
// O_NONBLOCK, so that open(2) of a FIFO without a writer, or of a device
// waiting for a carrier, returns at once instead of blocking the job; and
// O_NOCTTY, so that opening a terminal never makes it odek's controlling
// terminal. On a regular file neither changes anything.
const openGuard = syscall.O_NONBLOCK | syscall.O_NOCTTY

// openDirFlag makes an open of a directory fail with ENOTDIR, before
// anything is opened, when the name is something else.
const openDirFlag = syscall.O_DIRECTORY
