package artifacts

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkValidateHash64MiB measures the hashing throughput of validating
// one 64 MiB artifact with sha256 and size_bytes (page cache warm).
func BenchmarkValidateHash64MiB(b *testing.B) {
	root := b.TempDir()
	p := filepath.Join(root, "big.bin")
	data := make([]byte, 64<<20)
	rand.Read(data)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(data)
	size := int64(len(data))
	specs := []RefSpec{{Schema: RefSchema, ID: "big", URI: "file://" + p, MediaType: "application/octet-stream", SHA256: hex.EncodeToString(sum[:]), SizeBytes: &size}}
	v := &Validator{Roots: []string{root}}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(specs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	refs := []Ref{{ID: "r1", MediaType: "application/xml", SizeBytes: 1 << 20, SHA256: "9f2c1a2b3c4d5e6f9f2c1a2b3c4d5e6f9f2c1a2b3c4d5e6f9f2c1a2b3c4d5e6f", Summary: "report"}}
	text := string(make([]byte, 4096))
	for b.Loop() {
		Render("srv", "tool", text, refs, 200000)
	}
}
