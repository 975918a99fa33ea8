package bot

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// The per-chat storage quota (Config.ChatStorageBytes) bounds what uploads
// add to the volume the chats share: the bot measures the chat's directory
// before it fetches a file, refuses one whose reported size does not fit,
// and writes through a quotaWriter that stops at what is left, so a file
// whose size Telegram did not report (or reported wrong) is cut off and
// removed at the quota, never past it.

// errOverQuota is a write that would take a chat's directory past its
// storage quota.
var errOverQuota = errors.New("bot: the chat's storage quota is reached")

// diskUsage is the bytes on disk under root: every entry's allocated
// blocks (as du counts them; a sparse file counts what it holds), found
// through the root, so no name or symlink leads out of the chat's
// directory. Symlinks count themselves, not their targets.
func diskUsage(root *os.Root) (int64, error) {
	var total int64
	err := fs.WalkDir(root.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		total += allocated(fi)
		return nil
	})
	return total, err
}

// quotaWriter passes writes to w while they fit in left bytes; a write
// that does not fit is refused whole (errOverQuota) and over is set, so
// nothing past the quota reaches the file.
type quotaWriter struct {
	w    io.Writer
	left int64
	over bool
}

func (q *quotaWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > q.left {
		q.over = true
		return 0, errOverQuota
	}
	n, err := q.w.Write(p)
	q.left -= int64(n)
	return n, err
}
