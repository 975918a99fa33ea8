package bot

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/queue"
)

// /artifact re-checks the digest the worker measured: a file changed
// after the job ended is refused.
func TestValidateArtifactChecksTheWorkersDigest(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "7"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "7", "out.txt")
	if err := os.WriteFile(p, []byte("result"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("result"))
	meta := queue.ArtifactMeta{Path: "7/out.txt", Name: "out.txt", MIME: "text/plain", Bytes: 6, SHA256: hex.EncodeToString(sum[:])}
	if _, err := validateArtifact(dir, 7, "a1", meta, MaxUploadBytes); err != nil {
		t.Fatalf("untouched artifact refused: %v", err)
	}
	if err := os.WriteFile(p, []byte("RESULT"), 0o600); err != nil { // same size, other bytes
		t.Fatal(err)
	}
	_, err := validateArtifact(dir, 7, "a1", meta, MaxUploadBytes)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "sha256") {
		t.Fatalf("changed artifact: err = %v, want a sha256 mismatch", err)
	}
}
