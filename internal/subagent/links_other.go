//go:build !unix

package subagent

import "os"

// linkCount reports 1 where the platform does not expose link counts.
func linkCount(os.FileInfo) uint64 { return 1 }
