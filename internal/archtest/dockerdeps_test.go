package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// depsHeader opens deps.txt; the list below it is what TestDockerDeps
// compares.
const depsHeader = `# The packages of other modules that odek, odek-bot and odek-sandbox link
# (linux, CGO_ENABLED=0), one per line. The Dockerfile compiles them in a
# layer of its own, cached until go.mod, go.sum or this list change, so a
# source edit recompiles only odek's packages, and nothing the binaries do
# not link is compiled. internal/archtest's TestDockerDeps keeps the list
# equal to ` + "`go list -deps`" + `; regenerate it with
#   ODEK_WRITE_DEPS=1 go test -run TestDockerDeps ./internal/archtest/
`

// TestDockerDeps checks deps.txt against the packages the image's three
// binaries link. A stale list still builds (the source build compiles
// what is missing), but a dependency change would then recompile outside
// the cached layer, or compile packages nothing links.
func TestDockerDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"./cmd/odek", "./cmd/odek-bot", "./cmd/odek-sandbox")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var want []string
	for _, p := range strings.Fields(string(out)) {
		if p != module && !strings.HasPrefix(p, module+"/") {
			want = append(want, p)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if len(want) < 50 || !slices.Contains(want, "github.com/redis/go-redis/v9") {
		t.Fatalf("go list gave %d dependency packages without go-redis: the check would be vacuous", len(want))
	}
	path := filepath.Join(root, "deps.txt")
	text := depsHeader + strings.Join(want, "\n") + "\n"
	if os.Getenv("ODEK_WRITE_DEPS") == "1" {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate: ODEK_WRITE_DEPS=1 go test -run TestDockerDeps ./internal/archtest/)", err)
	}
	var got []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			got = append(got, l)
		}
	}
	if !slices.Equal(got, want) {
		var missing, extra []string
		for _, p := range want {
			if !slices.Contains(got, p) {
				missing = append(missing, p)
			}
		}
		for _, p := range got {
			if !slices.Contains(want, p) {
				extra = append(extra, p)
			}
		}
		t.Errorf("deps.txt is stale: missing %v, not linked %v (regenerate: ODEK_WRITE_DEPS=1 go test -run TestDockerDeps ./internal/archtest/)", missing, extra)
	}
}
