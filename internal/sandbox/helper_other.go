//go:build !linux

package sandbox

import (
	"errors"
	"io"
	"os"
)

// ABI is 0: Landlock exists only on Linux.
func ABI() int { return 0 }

func enforce(Spec) error { return errors.New("the sandbox needs Linux (Landlock)") }

func helperExec(string, []string, []string) error {
	return errors.New("the sandbox needs Linux (Landlock)")
}

func abiHint(int) string { return "Landlock exists only on Linux" }

func setLimits(Spec) error { return errors.New("the sandbox needs Linux (Landlock)") }

func reachable(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func newSession() error { return errors.New("the sandbox needs Linux (Landlock)") }

func joinCgroup(string) error { return errors.New("cgroups need Linux") }

// ownedBySelfOrRoot: no lean helper off Linux (no sandbox to run).
func ownedBySelfOrRoot(os.FileInfo) bool { return false }

// SuperviseArg makes an odek binary a job's supervisor (Linux only).
const SuperviseArg = "__odek-sandbox-supervise"

func runSupervisor([]string, io.Writer) int { return ExitNotConfined }
