//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
)

// Jail starts commands confined by one Spec; on this system it cannot be
// built (Landlock is Linux's).
type Jail struct{ spec Spec }

// ErrJailClosed is Start's error after Close.
var ErrJailClosed = errors.New("sandbox: the jail is closed")

// NewJail fails: the sandbox needs Linux.
func NewJail(Spec) (*Jail, error) {
	return nil, errors.New("sandbox: the sandbox needs Linux (Landlock)")
}

// Spec is the jail's ruleset.
func (j *Jail) Spec() Spec { return j.spec }

// Start fails: the sandbox needs Linux.
func (j *Jail) Start(*exec.Cmd) error {
	return errors.New("sandbox: the sandbox needs Linux (Landlock)")
}

// Run fails: the sandbox needs Linux.
func (j *Jail) Run(context.Context, *exec.Cmd) (syscall.WaitStatus, error) {
	var none syscall.WaitStatus
	return none, errors.New("sandbox: the sandbox needs Linux (Landlock)")
}

// Supervisor: none without Linux.
func (j *Jail) Supervisor() (int, error) { return 0, errors.New("the sandbox needs Linux (Landlock)") }

// Close does nothing.
func (j *Jail) Close() error { return nil }

// CgroupStatus: per-job cgroups are Linux's.
func CgroupStatus() (string, error) { return "", errors.New("cgroups need Linux") }

// KillJobsOf does nothing without per-job cgroups.
func KillJobsOf(int) {}
