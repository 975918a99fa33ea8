package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testEvent(seq uint64, data map[string]any) *Event {
	return &Event{
		Schema: Schema, Type: ToolCallStarted, Seq: seq, RunID: testRunID, Iteration: 1, Tool: "shell",
		Timestamp: time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC), Data: data,
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("file does not end with a newline: %q", b)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestFileSinkWritesLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Write(testEvent(uint64(i+1), map[string]any{"call_id": "c", "html": "<a&b>"})); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	for i, line := range lines {
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if ev.Seq != uint64(i+1) || ev.RunID != testRunID {
			t.Errorf("line %d: %+v", i, ev)
		}
	}
	if !strings.Contains(lines[0], `"<a&b>"`) {
		t.Errorf("HTML characters escaped: %s", lines[0])
	}
	if err := s.Write(testEvent(4, nil)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenFileAppendsAndHardensMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte("{\"earlier\":true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil { // beat the umask
		t.Fatal(err)
	}
	s, err := OpenFile(path, FileOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %v after OpenFile, want 0600", got)
	}
	if err := s.Write(testEvent(1, nil)); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 || lines[0] != `{"earlier":true}` {
		t.Errorf("existing content not kept: %q", lines)
	}
}

func TestOpenFileCreatesWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.jsonl")
	s, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want regular 0600", fi.Mode())
	}
}

func TestOpenFileRefusals(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.jsonl")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	subdir := filepath.Join(dir, "sub")
	if err := os.Mkdir(subdir, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
		mention    string
	}{
		{"missing parent", filepath.Join(dir, "no", "such", "events.jsonl"), ErrNoParentDir, filepath.Join(dir, "no", "such")},
		{"parent is a file", filepath.Join(target, "events.jsonl"), ErrNoParentDir, target},
		{"symlink to a file", link, ErrSymlink, link},
		{"dangling symlink", dangling, ErrSymlink, dangling},
		{"directory", subdir, ErrNotRegular, "directory"},
		{"empty path", "", fs.ErrInvalid, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenFile(tt.path, FileOptions{})
			if err == nil {
				s.Close()
				t.Fatal("OpenFile succeeded")
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q, want %v mentioning %q", err, tt.want, tt.mention)
			}
		})
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("symlink target changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("dangling symlink target was created")
	}
}

// TestOpenNoFollow checks the open itself: a symlink planted after the
// Lstat check (simulated by calling the open directly) is still refused.
func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "events.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f, err := openNoFollow(link)
	if err == nil {
		f.Close()
		t.Fatal("openNoFollow opened a symbolic link")
	}
	if !errors.Is(err, ErrSymlink) {
		t.Errorf("error %v, want ErrSymlink", err)
	}
}

func TestFileSinkShrinksLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, err := OpenFile(path, FileOptions{MaxLineBytes: 600, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := strings.Repeat("x", 1000)
	// Level 1: only the large field goes.
	if err := s.Write(testEvent(1, map[string]any{"call_id": "c1", "args": big, "args_bytes": 1000})); err != nil {
		t.Fatal(err)
	}
	// Level 2: many medium fields together are too long.
	many := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d"} {
		many[k] = strings.Repeat("y", 200)
	}
	if err := s.Write(testEvent(2, many)); err != nil {
		t.Fatal(err)
	}
	// Not even the envelope fits.
	ev := testEvent(3, nil)
	ev.Tool = big
	err = s.Write(ev)
	var lerr *LineTooLongError
	if !errors.As(err, &lerr) || !errors.Is(err, ErrLineTooLong) || lerr.Limit != 600 || lerr.Observed <= 600 || lerr.Seq != 3 {
		t.Fatalf("envelope too long: %v", err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines written, want 2", len(lines))
	}
	var got [2]Event
	for i, line := range lines {
		if len(line)+1 > 600 {
			t.Errorf("line %d is %d bytes", i, len(line)+1)
		}
		if err := json.Unmarshal([]byte(line), &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	if d := got[0].Data; d["call_id"] != "c1" || d["args_bytes"] != 1000.0 || d["args"] != nil ||
		!reflect.DeepEqual(d["truncated_fields"], []any{"args"}) || d["line_bytes"].(float64) < 1000 {
		t.Errorf("level-1 shrink: %v", d)
	}
	if d := got[1].Data; len(d) != 2 || !reflect.DeepEqual(d["truncated_fields"], []any{"a", "b", "c", "d"}) {
		t.Errorf("level-2 shrink: %v", d)
	}
	if got[0].Seq != 1 || got[0].Type != ToolCallStarted || got[0].Tool != "shell" {
		t.Errorf("shrunk envelope changed: %+v", got[0])
	}
}

func TestShrink(t *testing.T) {
	ev := testEvent(5, map[string]any{"small": 1, "big": strings.Repeat("z", shrinkKeep), "edge": strings.Repeat("z", shrinkKeep-2)})
	tests := []struct {
		level int
		want  map[string]any
	}{
		{1, map[string]any{"small": 1, "edge": strings.Repeat("z", shrinkKeep-2), "truncated_fields": []string{"big"}, "line_bytes": 900}},
		{2, map[string]any{"truncated_fields": []string{"big", "edge", "small"}, "line_bytes": 900}},
	}
	for _, tt := range tests {
		got := shrink(ev, 900, tt.level)
		if !reflect.DeepEqual(got.Data, tt.want) {
			t.Errorf("level %d: %v, want %v", tt.level, got.Data, tt.want)
		}
		if got.Seq != ev.Seq || got.Tool != ev.Tool || len(ev.Data) != 3 {
			t.Errorf("level %d changed the envelope or the original", tt.level)
		}
	}
	if got := shrink(testEvent(1, nil), 10, 1).Data; !reflect.DeepEqual(got["truncated_fields"], []string{}) {
		t.Errorf("no data: %v", got)
	}
}

func TestFileSinkOneWritePerEvent(t *testing.T) {
	// Concurrent writers never interleave inside a line.
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, err := OpenFile(path, FileOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 50 {
				err = errors.Join(err, s.Write(testEvent(uint64(g*100+i+1), map[string]any{"pad": strings.Repeat("p", 5000)})))
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	lines := readLines(t, path)
	if len(lines) != 200 {
		t.Fatalf("%d lines, want 200", len(lines))
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Fatalf("line %d is not JSON: %.80s", i, line)
		}
	}
	if bytes.Count([]byte(strings.Join(lines, "\n")), []byte(`"schema"`)) != 200 {
		t.Error("lines merged")
	}
}
