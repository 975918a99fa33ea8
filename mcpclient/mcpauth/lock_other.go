//go:build !unix

package mcpauth

// lockFile is a no-op where flock is missing: refreshes are serialised
// within the process only.
func lockFile(string) (func(), error) { return func() {}, nil }
