//go:build !unix

package mcptest

// lockFile is a no-op where flock does not exist; installs there are
// serialised only within one process.
func lockFile(string) (func(), error) { return func() {}, nil }
