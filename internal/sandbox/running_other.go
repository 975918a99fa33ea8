//go:build !linux

package sandbox

// Running reports false: no jail runs anything on this system.
func (j *Jail) Running() bool { return false }
