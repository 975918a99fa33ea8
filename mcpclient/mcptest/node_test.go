package mcptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeEntry(t *testing.T) {
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const pkg = "@scope/server-thing"
	for _, tc := range []struct {
		name      string
		installed string // the package's package.json; "" = not installed
		script    string // file created under the package dir
		want      string // entry path relative to the package dir, or an error substring
		wantErr   bool
	}{
		{"bin string", `{"version":"1.2.3","bin":"dist/index.js"}`, "dist/index.js", "dist/index.js", false},
		{"bin map of one", `{"version":"1.2.3","bin":{"other-name":"dist/main.js"}}`, "dist/main.js", "dist/main.js", false},
		{"bin map named after the package", `{"version":"1.2.3","bin":{"x":"a.js","mcp-server-thing":"b.js"}}`, "b.js", "b.js", false},
		{"not installed", "", "", "is not installed", true},
		{"other version", `{"version":"1.2.4","bin":"dist/index.js"}`, "dist/index.js", "installed at version 1.2.4, package.json pins 1.2.3", true},
		{"no bin", `{"version":"1.2.3"}`, "", `no usable "bin"`, true},
		{"entry missing", `{"version":"1.2.3","bin":"dist/index.js"}`, "", "entry point", true},
		{"unpinned", `{"version":"1.2.3","bin":"dist/index.js"}`, "dist/index.js", "is not pinned", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pinned := pkg
			if tc.name == "unpinned" {
				pinned = "@scope/another"
			}
			write(t, filepath.Join(dir, "package.json"), `{"dependencies":{"`+pinned+`":"1.2.3"}}`)
			pkgDir := filepath.Join(dir, "node_modules", "@scope", "server-thing")
			if tc.installed != "" {
				write(t, filepath.Join(pkgDir, "package.json"), tc.installed)
			}
			if tc.script != "" {
				write(t, filepath.Join(pkgDir, tc.script), "// entry")
			}
			got, err := nodeEntry(dir, pkg)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("nodeEntry = %q, %v; want an error containing %q", got, err, tc.want)
				}
				return
			}
			if err != nil || got != filepath.Join(pkgDir, tc.want) {
				t.Fatalf("nodeEntry = %q, %v; want %q", got, err, filepath.Join(pkgDir, tc.want))
			}
		})
	}
}
