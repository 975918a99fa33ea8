//go:build !unix

package tools

// openGuard and openDirFlag have no equivalent here: there are no FIFOs to
// block on, and the type checks after each open still apply.
const (
	openGuard   = 0
	openDirFlag = 0
)
