//go:build linux && arm64

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	// x32Bit has no meaning on arm64; no syscall number reaches it.
	x32Bit = 0x40000000
)
