//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's syscall numbers.
	x32Bit = 0x40000000
)
