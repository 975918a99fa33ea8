//go:build linux && !amd64 && !arm64

package sandbox

// No seccomp filter is written for this architecture: installSeccomp
// fails, so the sandbox fails closed.
const (
	auditArch = 0
	x32Bit    = 0x40000000
)
