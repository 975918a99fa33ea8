//go:build !unix

package skills

// openFlags: no FIFOs to block on here; ReadFile's type check still applies.
const openFlags = 0
