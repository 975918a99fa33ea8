package artifactstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/artifactstore"
)

// validated writes content under a root and validates it like an MCP
// envelope or a sub-agent result would be.
func validated(t *testing.T, id, name, mediaType, content string) artifacts.Ref {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	v := artifacts.Validator{Roots: []string{root}}
	refs, err := v.Validate([]artifacts.RefSpec{{Schema: artifacts.RefSchema, ID: id, URI: "file://" + p, MediaType: mediaType}})
	if err != nil {
		t.Fatal(err)
	}
	return refs[0]
}

func run(t *testing.T, tool *artifactstore.ReadTool, args string) (string, bool) {
	t.Helper()
	if _, err := tool.Assess(json.RawMessage(args)); err != nil {
		return err.Error(), true
	}
	res, err := tool.Run(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return res.Text, res.IsError
}

func TestReadPages(t *testing.T) {
	s := &artifactstore.Store{}
	content := strings.Repeat("abcdefghij", 5000) // 50,000 bytes
	ref := validated(t, "srv/report", "r.txt", "text/plain", content)
	if err := s.Register(ref); err != nil {
		t.Fatal(err)
	}
	tool := artifactstore.NewReadTool(s)
	tests := []struct {
		args, want string
		isErr      bool
	}{
		{`{"id":"srv/report"}`, "bytes 0-16383 of 50000 (text); more remains: next offset 16384]", false},
		{`{"id":"srv/report","offset":49990,"limit":100}`, "bytes 49990-49999 of 50000 (text); end of artifact]", false},
		{`{"id":"srv/report","offset":60000}`, "no bytes at offset 50000; the artifact has 50000 bytes", false},
		{`{"id":"srv/report","limit":70000}`, "limit 70000: want 1 to 65536", true},
		{`{"id":"srv/report","offset":-1}`, "offset -1", true},
		{`{"offset":1}`, `missing "id"`, true},
		{`{"id":"nope"}`, `unknown artifact id "nope"; known ids: "srv/report"`, true},
	}
	for _, tt := range tests {
		got, isErr := run(t, tool, tt.args)
		if isErr != tt.isErr || !strings.Contains(got, tt.want) {
			t.Errorf("%s: (%v) %.200q, want %q", tt.args, isErr, got, tt.want)
		}
		if strings.Contains(got, ref.Path) {
			t.Errorf("%s: output carries the path", tt.args)
		}
	}
	page, _ := run(t, tool, `{"id":"srv/report","offset":10,"limit":5}`)
	if !strings.Contains(page, "odek-untrusted") || !strings.Contains(page, "\nabcde\n") {
		t.Errorf("content not inside the untrusted boundary: %q", page)
	}
}

func TestReadKeepsRunesWhole(t *testing.T) {
	s := &artifactstore.Store{}
	s.Register(validated(t, "u", "u.txt", "text/plain; charset=utf-8", strings.Repeat("é", 100)))
	p, err := s.Read("u", 0, 5) // cuts the third "é" in half
	if err != nil {
		t.Fatal(err)
	}
	out := artifactstore.RenderPage(p, true)
	if !strings.Contains(out, "bytes 0-3 of 200 (text); more remains: next offset 4]") || !utf8.ValidString(out) {
		t.Fatalf("%q", out)
	}
}

func TestBinaryIsBase64(t *testing.T) {
	s := &artifactstore.Store{}
	s.Register(validated(t, "b", "b.bin", "application/octet-stream", "\x00\xff\x10"))
	out, isErr := run(t, artifactstore.NewReadTool(s), `{"id":"b"}`)
	if isErr || !strings.Contains(out, "(base64)") || !strings.Contains(out, "AP8Q") {
		t.Fatalf("%q", out)
	}
}

func TestChangedFileRefused(t *testing.T) {
	s := &artifactstore.Store{}
	ref := validated(t, "c", "c.txt", "text/plain", "12345")
	s.Register(ref)
	os.WriteFile(ref.Path, []byte("123"), 0o600)
	if _, err := s.Read("c", 0, 0); !errors.Is(err, artifactstore.ErrChanged) {
		t.Fatalf("truncated file: %v", err)
	}
	os.Remove(ref.Path)
	os.Symlink("/etc/hostname", ref.Path)
	if _, err := s.Read("c", 0, 0); !errors.Is(err, artifactstore.ErrChanged) {
		t.Fatalf("symlink swap: %v", err)
	}
}

func TestRegisterRules(t *testing.T) {
	s := &artifactstore.Store{}
	a := validated(t, "x", "a.txt", "text/plain", "a")
	if err := s.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(a); err != nil {
		t.Fatalf("re-registering the same file: %v", err)
	}
	b := validated(t, "x", "b.txt", "text/plain", "b")
	if err := s.Register(b); !errors.Is(err, artifactstore.ErrDuplicateID) {
		t.Fatalf("different file under a taken id: %v", err)
	}
	if err := s.Register(artifacts.Ref{ID: "y"}); err == nil {
		t.Fatal("a ref without a validated path was accepted")
	}
}

func TestIsText(t *testing.T) {
	for mt, want := range map[string]bool{
		"text/plain; charset=utf-8": true, "application/json": true, "application/vnd.x+json": true,
		"application/xml": true, "image/png": false, "application/octet-stream": false, "garbage;;": false,
	} {
		if artifactstore.IsText(mt) != want {
			t.Errorf("IsText(%q) != %v", mt, want)
		}
	}
}

func FuzzReadArgs(f *testing.F) {
	f.Add([]byte(`{"id":"x","offset":3,"limit":10}`))
	f.Add([]byte(`{"id":"x","offset":-5}`))
	f.Add([]byte(`{"id":1}`))
	f.Add([]byte(`{"id":"x","limit":1e30}`))
	s := &artifactstore.Store{}
	tool := artifactstore.NewReadTool(s)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		res, err := tool.Run(context.Background(), raw)
		if err != nil || !res.IsError { // nothing is registered: every call fails, as a result
			t.Fatalf("%+v %v", res, err)
		}
	})
}

// TestReplacedFileRefused: a file replaced after registration by another
// of the same size — directly or by swapping a directory on its path for
// a symlink — is not the validated file and is refused.
func TestReplacedFileRefused(t *testing.T) {
	s := &artifactstore.Store{}
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o700)
	p := filepath.Join(sub, "r.txt")
	if err := os.WriteFile(p, []byte("valid"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := artifacts.Validator{Roots: []string{root}}
	refs, err := v.Validate([]artifacts.RefSpec{{Schema: artifacts.RefSchema, ID: "r", URI: "file://" + p, MediaType: "text/plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(refs[0]); err != nil {
		t.Fatal(err)
	}
	// Same size, new inode, renamed over the validated name.
	tmp := filepath.Join(sub, "tmp")
	os.WriteFile(tmp, []byte("OTHER"), 0o600)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if pg, err := s.Read("r", 0, 0); !errors.Is(err, artifactstore.ErrChanged) {
		t.Fatalf("replaced file: read %q, err %v; want ErrChanged", pg.Data, err)
	}
	// A directory on the path swapped for a symlink to one outside the root.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "r.txt"), []byte("SECRT"), 0o600)
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	if pg, err := s.Read("r", 0, 0); !errors.Is(err, artifactstore.ErrChanged) {
		t.Fatalf("symlinked directory: read %q, err %v; want ErrChanged", pg.Data, err)
	}
}

// A file swapped in between validation and registration (same size, at
// the same path) is not registered: the ref carries the identity of the
// descriptor it was validated through.
func TestRegisterRefusesAFileSwappedAfterValidation(t *testing.T) {
	ref := validated(t, "s", "s.txt", "text/plain", "chat's own")
	if err := os.Rename(ref.Path, ref.Path+".old"); err != nil { // keep the inode alive
		t.Fatal(err)
	}
	if err := os.WriteFile(ref.Path, []byte("other chat"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &artifactstore.Store{}
	if err := s.Register(ref); !errors.Is(err, artifactstore.ErrChanged) {
		t.Fatalf("Register = %v, want ErrChanged", err)
	}
}
