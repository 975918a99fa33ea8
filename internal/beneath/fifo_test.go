//go:build unix

package beneath_test

import "syscall"

func mkfifoErr(p string) error { return syscall.Mkfifo(p, 0o600) }
