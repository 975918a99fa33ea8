package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// writeFile creates path with data and returns its sha256 hex.
func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func i64(n int64) *int64 { return &n }

func spec(id, path string) RefSpec {
	return RefSpec{Schema: RefSchema, ID: id, URI: "file://" + path, MediaType: "text/plain"}
}

func TestValidate(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	data := []byte("hello artifact\n")
	good := filepath.Join(root, "run", "report.txt")
	goodSum := writeFile(t, good, data)
	secret := filepath.Join(outside, "secret.txt")
	writeFile(t, secret, []byte("secret"))
	// A sibling directory whose name extends the root's: not inside.
	sibling := filepath.Join(base, "root2", "x.txt")
	writeFile(t, sibling, data)
	mustSymlink(t, secret, filepath.Join(root, "escape.txt"))
	mustSymlink(t, outside, filepath.Join(root, "escape-dir"))
	mustSymlink(t, good, filepath.Join(root, "alias.txt"))
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	upper := strings.ToUpper(goodSum)
	wrongSum := strings.Repeat("0", 64)

	v := &Validator{Roots: []string{root}}
	tests := []struct {
		name    string
		v       *Validator
		specs   []RefSpec
		wantErr error
		check   func(t *testing.T, refs []Ref)
	}{
		{name: "no refs", v: &Validator{}, specs: nil},
		{name: "valid with hash and size", v: v, specs: []RefSpec{func() RefSpec {
			s := spec("r1", good)
			s.SHA256, s.SizeBytes, s.Summary = goodSum, i64(int64(len(data))), "the report"
			return s
		}()}, check: func(t *testing.T, refs []Ref) {
			r := refs[0]
			if r.Path != good || r.SizeBytes != int64(len(data)) || r.SHA256 != goodSum || r.Summary != "the report" {
				t.Fatalf("ref = %+v", r)
			}
			if r.Root != root {
				t.Fatalf("root = %q, want %q", r.Root, root)
			}
		}},
		{name: "valid without hash: size measured, hash empty", v: v, specs: []RefSpec{spec("r1", good)}, check: func(t *testing.T, refs []Ref) {
			if refs[0].SizeBytes != int64(len(data)) || refs[0].SHA256 != "" {
				t.Fatalf("ref = %+v", refs[0])
			}
		}},
		{name: "symlink inside root resolves", v: v, specs: []RefSpec{spec("a", filepath.Join(root, "alias.txt"))}, check: func(t *testing.T, refs []Ref) {
			if refs[0].Path != good {
				t.Fatalf("path = %q, want %q", refs[0].Path, good)
			}
		}},
		{name: "root given through a symlink", v: &Validator{Roots: []string{mustSymlinkRet(t, root, filepath.Join(base, "root-link"))}}, specs: []RefSpec{spec("r1", good)}},
		{name: "file named through a symlinked root", v: v, specs: []RefSpec{spec("r1", filepath.Join(base, "root-link", "run", "report.txt"))}},
		{name: "no roots", v: &Validator{}, specs: []RefSpec{spec("r1", good)}, wantErr: ErrNoRoots},
		{name: "roots do not exist", v: &Validator{Roots: []string{filepath.Join(base, "nope")}}, specs: []RefSpec{spec("r1", good)}, wantErr: ErrNoRoots},
		{name: "relative root ignored", v: &Validator{Roots: []string{"root"}}, specs: []RefSpec{spec("r1", good)}, wantErr: ErrNoRoots},
		{name: "etc passwd", v: v, specs: []RefSpec{spec("p", "/etc/passwd")}, wantErr: ErrOutsideRoots},
		{name: "prefix trick root2", v: v, specs: []RefSpec{spec("p", sibling)}, wantErr: ErrOutsideRoots},
		{name: "symlink escape", v: v, specs: []RefSpec{spec("p", filepath.Join(root, "escape.txt"))}, wantErr: ErrOutsideRoots},
		{name: "symlinked dir escape", v: v, specs: []RefSpec{spec("p", filepath.Join(root, "escape-dir", "secret.txt"))}, wantErr: ErrOutsideRoots},
		{name: "dotdot", v: v, specs: []RefSpec{spec("p", root+"/../outside/secret.txt")}, wantErr: ErrBadURI},
		{name: "encoded dotdot", v: v, specs: []RefSpec{spec("p", root+"/%2e%2e/outside/secret.txt")}, wantErr: ErrBadURI},
		{name: "not file scheme", v: v, specs: []RefSpec{{Schema: RefSchema, ID: "h", URI: "https://example.test/x", MediaType: "text/plain"}}, wantErr: ErrBadURI},
		{name: "missing file", v: v, specs: []RefSpec{spec("m", filepath.Join(root, "missing.txt"))}, wantErr: ErrNotFound},
		{name: "directory", v: v, specs: []RefSpec{spec("d", filepath.Join(root, "dir"))}, wantErr: ErrNotRegular},
		{name: "fifo", v: v, specs: []RefSpec{spec("f", filepath.Join(root, "fifo"))}, wantErr: ErrNotRegular},
		{name: "wrong hash", v: v, specs: []RefSpec{func() RefSpec { s := spec("h", good); s.SHA256 = wrongSum; return s }()}, wantErr: ErrHashMismatch},
		{name: "uppercase hash", v: v, specs: []RefSpec{func() RefSpec { s := spec("h", good); s.SHA256 = upper; return s }()}, wantErr: ErrBadHash},
		{name: "short hash", v: v, specs: []RefSpec{func() RefSpec { s := spec("h", good); s.SHA256 = goodSum[:12]; return s }()}, wantErr: ErrBadHash},
		{name: "wrong size", v: v, specs: []RefSpec{func() RefSpec { s := spec("s", good); s.SizeBytes = i64(999); return s }()}, wantErr: ErrSizeMismatch},
		{name: "negative size", v: v, specs: []RefSpec{func() RefSpec { s := spec("s", good); s.SizeBytes = i64(-1); return s }()}, wantErr: ErrBadSize},
		{name: "too large", v: &Validator{Roots: []string{root}, MaxArtifactBytes: 4}, specs: []RefSpec{spec("big", good)}, wantErr: ErrTooLarge},
		{name: "bad schema", v: v, specs: []RefSpec{func() RefSpec { s := spec("x", good); s.Schema = "odek.artifact-ref/v2"; return s }()}, wantErr: ErrBadSchema},
		{name: "missing id", v: v, specs: []RefSpec{spec("", good)}, wantErr: ErrMissingField},
		{name: "missing uri", v: v, specs: []RefSpec{{Schema: RefSchema, ID: "x", MediaType: "text/plain"}}, wantErr: ErrMissingField},
		{name: "missing media type", v: v, specs: []RefSpec{{Schema: RefSchema, ID: "x", URI: "file://" + good}}, wantErr: ErrMissingField},
		{name: "bad media type", v: v, specs: []RefSpec{func() RefSpec { s := spec("x", good); s.MediaType = "not a type"; return s }()}, wantErr: ErrBadMediaType},
		{name: "id with newline", v: v, specs: []RefSpec{spec("a\nb", good)}, wantErr: ErrBadID},
		{name: "id too long", v: v, specs: []RefSpec{spec(strings.Repeat("i", MaxIDChars+1), good)}, wantErr: ErrBadID},
		{name: "duplicate ids", v: v, specs: []RefSpec{spec("same", good), spec("same", good)}, wantErr: ErrDuplicateID},
		{name: "too many refs", v: &Validator{Roots: []string{root}, MaxRefs: 2}, specs: []RefSpec{spec("a", good), spec("b", good), spec("c", good)}, wantErr: ErrTooManyRefs},
		{name: "static errors before file access", v: v, specs: []RefSpec{spec("p", "/etc/passwd"), spec("", good)}, wantErr: ErrMissingField},
		{name: "default max refs", v: v, specs: manySpecs(good, DefaultMaxRefs+1), wantErr: ErrTooManyRefs},
		{name: "max refs accepted", v: v, specs: manySpecs(good, DefaultMaxRefs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs, err := tt.v.Validate(tt.specs)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if refs != nil {
					t.Fatalf("refs returned with an error: %+v", refs)
				}
				if strings.Contains(err.Error(), base) {
					t.Fatalf("error text contains the path: %v", err)
				}
				var re *RefError
				if !errors.Is(tt.wantErr, ErrTooManyRefs) && !errors.As(err, &re) {
					t.Fatalf("err %T is not a *RefError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(refs) != len(tt.specs) {
				t.Fatalf("got %d refs, want %d", len(refs), len(tt.specs))
			}
			if tt.check != nil {
				tt.check(t, refs)
			}
		})
	}
}

func TestRefErrorNamesIDAndReason(t *testing.T) {
	root := t.TempDir()
	v := &Validator{Roots: []string{root}}
	_, err := v.Validate([]RefSpec{spec("ok", filepath.Join(root, "missing")), spec("x", "/etc/passwd")})
	var re *RefError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
	if re.Index != 0 || re.ID != "ok" || re.Reason == "" || !errors.Is(err, ErrNotFound) {
		t.Fatalf("RefError = %+v", re)
	}
	if !strings.Contains(err.Error(), `"ok"`) || !strings.Contains(err.Error(), "#0") {
		t.Fatalf("error text %q does not name the ref", err)
	}
}

// A FIFO at the ref's path is refused at once (the open does not block)
// as not a regular file.
func TestValidateRefusesAFIFO(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "pipe")
	if err := mkfifo(p); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	v := Validator{Roots: []string{root}}
	if _, err := v.Validate([]RefSpec{spec("a", p)}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("err = %v, want ErrNotRegular", err)
	}
}

// The ref carries the identity of the descriptor it was validated
// through, for readers that open the path later.
func TestValidateCarriesTheFilesIdentity(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "f")
	writeFile(t, p, []byte("one"))
	v := Validator{Roots: []string{root}}
	refs, err := v.Validate([]RefSpec{spec("a", p)})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || refs[0].FileInfo() == nil || !os.SameFile(fi, refs[0].FileInfo()) {
		t.Fatalf("identity %v, file %v %v", refs[0].FileInfo(), fi, err)
	}
	if (Ref{}).FileInfo() != nil {
		t.Error("a zero Ref has an identity")
	}
}

func manySpecs(path string, n int) []RefSpec {
	out := make([]RefSpec, n)
	for i := range out {
		out[i] = spec("id-"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+itoa(i), path)
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustSymlinkRet(t *testing.T, target, link string) string {
	mustSymlink(t, target, link)
	return link
}
