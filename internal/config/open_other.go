//go:build !unix

package config

// openFlags adds nothing where O_NONBLOCK does not exist.
const openFlags = 0
