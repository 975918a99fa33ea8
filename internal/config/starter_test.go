package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestStarterRoundTrip(t *testing.T) {
	home := filepath.Join(t.TempDir(), "new", "odek-home")
	path := filepath.Join(home, OperatorFileName)
	if err := WriteStarter(path, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if st.Mode().Perm() != 0o600 {
			t.Errorf("file mode %v, want 0600", st.Mode().Perm())
		}
		dst, err := os.Stat(home)
		if err != nil {
			t.Fatal(err)
		}
		if dst.Mode().Perm() != 0o700 {
			t.Errorf("dir mode %v, want 0700", dst.Mode().Perm())
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, StarterJSON()) {
		t.Fatalf("content differs from StarterJSON (err %v)", err)
	}

	withStarter, warns := mustLoad(t, Options{Home: home, ProjectDir: t.TempDir(), Environ: env()})
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	plain, _ := mustLoad(t, dirs(t, "", ""))
	a, b := *withStarter, *plain
	for _, c := range []*Config{&a, &b} {
		c.Home, c.ProjectDir, c.Sources, c.Layers, c.MCPServers = "", "", nil, Layers{}, MCPServers{}
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("starter changes settings:\nstarter  %v\ndefaults %v", a, b)
	}
}

func TestStarterDocumentsEveryKey(t *testing.T) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(StarterJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"api_key", "base_url", "model", "max_iterations", "max_tool_parallel", "system_prompt", "dangerous", "llm", "tools"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("starter lacks %q", k)
		}
		if _, ok := doc["// "+k]; !ok {
			t.Errorf("starter lacks a note for %q", k)
		}
	}
	for k := range doc {
		if strings.HasPrefix(k, "//") {
			continue
		}
		if _, ok := doc["// "+k]; !ok {
			t.Errorf("key %q has no note", k)
		}
	}
}

func TestWriteStarterRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, OperatorFileName)
	writeFile(t, path, `{"api_key":"keep-me"}`, 0o600)
	err := WriteStarter(path, false)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want ErrExists naming the path", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"api_key":"keep-me"}` {
		t.Errorf("file changed: %s", b)
	}

	if runtime.GOOS != "windows" {
		link := filepath.Join(dir, "dangling.json")
		if err := os.Symlink(filepath.Join(dir, "nowhere"), link); err != nil {
			t.Fatal(err)
		}
		if err := WriteStarter(link, false); !errors.Is(err, ErrExists) {
			t.Errorf("dangling symlink: err = %v, want ErrExists", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("wrote through the symlink")
		}
	}
}

func TestWriteStarterForce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, OperatorFileName)
	writeFile(t, path, `old`, 0o644)
	target := filepath.Join(dir, "target.json")
	writeFile(t, target, `target`, 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		if err := WriteStarter(p, true); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Mode().IsRegular() || (runtime.GOOS != "windows" && st.Mode().Perm() != 0o600) {
			t.Errorf("%s: mode %v, want regular 0600", p, st.Mode())
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, StarterJSON()) {
			t.Errorf("%s: content not the starter", p)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "target" {
		t.Errorf("symlink target overwritten: %s", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("leftover files: %v", entries)
	}
}
