package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// limited returns the built-in tool name with its read limits changed by
// set, so the limits can be tested on small files.
func limited(t *testing.T, opts Options, name string, set func(c *config)) Tool {
	t.Helper()
	tool := builtin(t, opts, name)
	switch tt := tool.(type) {
	case *readFileTool:
		set(tt.c)
	case *patchTool:
		set(tt.c)
	case *searchFilesTool:
		set(tt.c)
	case *listDirTool:
		set(tt.c)
	default:
		t.Fatalf("no read limits on %s", name)
	}
	return tool
}

func hundredLines(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// read_file reads at most maxScanBytes of a file per call: past it the
// line count is a lower bound, and an offset beyond it is an error that
// names the limit and where to go instead.
func TestReadFileScanLimit(t *testing.T) {
	dir := t.TempDir()
	hundredLines(t, dir) // "line 1\n" … "line 100\n": 792 bytes
	opts := Options{WorkDir: dir, Confine: true}
	mustContain(t, run(t, builtin(t, opts, "read_file"), `{"path":"f.txt","limit":2}`), false, "lines 1-2 of 100;")
	tool := limited(t, opts, "read_file", func(c *config) { c.maxScanBytes = 100 })
	mustContain(t, run(t, tool, `{"path":"f.txt","limit":2}`), false,
		"lines 1-2 of at least 14 (counting stopped after 100 bytes, the most read_file reads of a file in one call); more remain")
	res := run(t, tool, `{"path":"f.txt"}`)
	mustContain(t, res, false, "lines 1-14 of at least 14", "line 14 goes on past that limit and is cut there]", "13\tline 13\n14\tline \n")
	mustContain(t, run(t, tool, `{"path":"f.txt","offset":50}`), true, "offset 50 is past the first 100 bytes of f.txt (14 lines)", "sed -n '50,")
}

// patch refuses a file above maxPatchBytes, and an edit that would make
// the file larger than that, naming the limit and the size.
func TestPatchSizeLimit(t *testing.T) {
	dir := t.TempDir()
	opts := Options{WorkDir: dir, Confine: true}
	tool := limited(t, opts, "patch", func(c *config) { c.maxPatchBytes = 64 })
	os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("a"), 65), 0o644)
	mustContain(t, run(t, tool, `{"path":"big","old_string":"a","new_string":"b","replace_all":true}`), true,
		"big is 65 bytes, above patch's limit of 64 bytes")
	os.WriteFile(filepath.Join(dir, "small"), bytes.Repeat([]byte("a"), 32), 0o644)
	mustContain(t, run(t, tool, `{"path":"small","old_string":"a","new_string":"bbb","replace_all":true}`), true,
		"the patched small would be 96 bytes, above patch's limit of 64 bytes")
	mustContain(t, run(t, tool, `{"path":"small","old_string":"a","new_string":"bb","replace_all":true}`), false, "replaced 32", "now 64 bytes")
	if b, _ := os.ReadFile(filepath.Join(dir, "big")); len(b) != 65 {
		t.Errorf("big changed: %d bytes", len(b))
	}
}

// search_files reads at most maxSearchBytes per call over all files, and
// says where it stopped.
func TestSearchFilesReadLimit(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		os.WriteFile(filepath.Join(dir, n), []byte("Foo "+n+"\n"), 0o644) // 10 bytes each
	}
	tool := limited(t, Options{WorkDir: dir, Confine: true}, "search_files", func(c *config) { c.maxSearchBytes = 15 })
	res := run(t, tool, `{"pattern":"Foo"}`)
	mustContain(t, res, false, "a.txt:1: Foo a.txt", "stopped after reading 15 bytes, the most search_files reads in one call")
	if strings.Contains(res.Text, "c.txt") {
		t.Errorf("searched past the limit:\n%s", res.Text)
	}
}

// list_dir and search_files read at most maxDirEntries of one directory
// and say which directory had more.
func TestDirEntryLimit(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte("Foo\n"), 0o644)
	}
	opts := Options{WorkDir: dir, Confine: true}
	set := func(c *config) { c.maxDirEntries = 3 }
	res := run(t, limited(t, opts, "list_dir", set), `{}`)
	mustContain(t, res, false, "[.: 3 entries", "[.: more than 3 entries; only the first 3 read were sorted and listed]")
	res = run(t, limited(t, opts, "search_files", set), `{"pattern":"Foo"}`)
	mustContain(t, res, false, "3 matches", "more than 3 entries; only the first 3 read were searched")
}

// boundedReader looks at its context before every piece of at most
// readChunk bytes, and stops at its limit.
func TestBoundedReader(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 1<<20)
	ctx := &cancelAfter{Context: context.Background(), n: 3}
	r := &boundedReader{ctx: ctx, r: bytes.NewReader(data), left: 1 << 30}
	n, err := readAllWith(r, make([]byte, 1<<20))
	if !errors.Is(err, context.Canceled) || r.ctxErr == nil || n != 2*readChunk {
		t.Errorf("read %d bytes, err %v; want %d bytes and the cancel", n, err, 2*readChunk)
	}
	r = &boundedReader{ctx: context.Background(), r: bytes.NewReader(data), left: 1000}
	n, err = readAllWith(r, make([]byte, 1<<20))
	if err != errReadLimit || n != 1000 {
		t.Errorf("read %d bytes, err %v; want 1000 and errReadLimit", n, err)
	}
}

// readAllWith reads r to its first error with buf, which is larger than
// readChunk, and counts the bytes.
func readAllWith(r io.Reader, buf []byte) (int, error) {
	total := 0
	for {
		n, err := r.Read(buf)
		total += n
		if err != nil {
			return total, err
		}
	}
}
