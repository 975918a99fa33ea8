//go:build !linux

package mcpclient

import (
	"io"
	"os"
)

// newStdoutPipe makes the pipe for the server's stdout: elsewhere than on
// Linux, an ordinary pipe read through the runtime's netpoller.
func newStdoutPipe() (io.ReadCloser, *os.File, error) {
	return os.Pipe()
}
