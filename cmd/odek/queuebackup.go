package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	estore "github.com/odekrun/odek/queue/embedded"
)

// queueBackupSub is `odek queue backup --store PATH OUT`.
var queueBackupSub = queueSub{name: "backup",
	usage:     "backup --store PATH OUT               copy odek-bot's embedded store to OUT (0600, checked), also while the bot runs",
	noConnect: true, // queueBackup opens the store or the bot's socket itself
	args: func(_ *queueArgs, rest []string) (string, error) {
		if len(rest) != 1 || rest[0] == "" {
			return "", usageErr("odek queue backup needs exactly one output file")
		}
		return rest[0], nil
	}}

// queueBackup copies the embedded store at storePath to out: through the
// running bot's admin socket when it holds the store, else from the file.
// The copy is written to a temporary file, synced, checked page by page
// (bbolt's check) and only then renamed to out.
func queueBackup(ctx context.Context, storePath, out string, jsonOut bool, stdout io.Writer) error {
	if storePath == "" {
		return usageErr("odek queue backup needs --store PATH (odek-bot's embedded store); a Redis queue is backed up by Redis itself (BGSAVE, or its append-only file)")
	}
	if a, b := absPath(storePath), absPath(out); a == b {
		return usageErr("odek queue backup: the output %s is the store itself", out)
	}
	tmp := out + ".partial"
	n, err := estore.WriteBackup(tmp, func(w io.Writer) (int64, error) { return estore.Copy(ctx, storePath, w) })
	if err == nil {
		if err = estore.CheckFile(tmp); err == nil {
			err = os.Rename(tmp, out)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return withCode(exitError, fmt.Errorf("odek queue backup: %w", err))
	}
	if jsonOut {
		return (&queueCLI{stdout: stdout}).json(map[string]any{"store": storePath, "backup": out, "bytes": n})
	}
	fmt.Fprintf(stdout, "backup of %s: %d bytes in %s (checked)\n", storePath, n, out)
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
