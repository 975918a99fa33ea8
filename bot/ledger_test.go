package bot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// Issue 17, restarts: a status message left by a process that was killed
// (no shutdown notice, no state file) is edited at the next start to say
// the job was interrupted, in the asker's language.
func TestOrphanedStatusIsCleanedAtStart(t *testing.T) {
	for _, volatile := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "ledger")
		q := queue.NewMemory(queue.Options{})
		h := startBot(t, q, func(c *Config) {
			c.Ledger = queue.FileStatusLedger{Dir: dir}
			c.StatusDelay = -1
			c.VolatileQueue = volatile
		})
		h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "never claimed", Lang: "de"}) // no worker
		h.waitVisible(alice, "⏳ Startet…")
		var entries []string
		h.tg.Wait(t, wait, "the status message in the ledger", func(*bottest.Server) bool {
			des, _ := os.ReadDir(dir)
			entries = nil
			for _, de := range des {
				entries = append(entries, de.Name())
			}
			return len(entries) == 1
		})
		// A SIGKILL leaves the status message and its ledger entry as
		// they are while the job runs. The graceful stop here cannot edit
		// the status (Telegram refuses the edit), so it leaves the same.
		h.tg.FailNext("editMessageText", 1, bottest.Failure{Code: 400, Description: "Bad Request: message can't be edited"})
		h.stop()
		if des, _ := os.ReadDir(dir); len(des) != 1 {
			t.Fatalf("ledger after the stop: %v", des)
		}
		h.run(func(c *Config) { c.Ledger = queue.FileStatusLedger{Dir: dir}; c.VolatileQueue = volatile })
		want := "Falls ein Worker noch daran war, kommt seine Antwort hierher"
		if volatile {
			want = "und sie ging dabei verloren"
		}
		h.waitVisible(alice, "⚠️ Unterbrochen: odek-bot wurde unerwartet beendet")
		h.waitVisible(alice, want)
		h.tg.Wait(t, wait, "the ledger emptied", func(*bottest.Server) bool {
			des, _ := os.ReadDir(dir)
			return len(des) == 0
		})
		for _, v := range h.tg.Visible(alice) {
			if strings.Contains(v, "⏳ Startet") {
				t.Errorf("volatile=%v: a Working status stays: %q", volatile, h.tg.Visible(alice))
			}
		}
		h.stop()
	}
}
