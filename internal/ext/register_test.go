package ext

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/mcpclient"
)

type fixedCaller struct{ res *mcpclient.ToolResult }

func (c fixedCaller) Call(context.Context, string, json.RawMessage) (*mcpclient.ToolResult, error) {
	return c.res, nil
}

func TestRunRegistersArtifactsUnderServerIDs(t *testing.T) {
	dir := t.TempDir()
	ref := func(name string) artifacts.Ref {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		return artifacts.Ref{ID: "out", MediaType: "text/plain", Path: p, Root: dir, SizeBytes: int64(len(name))}
	}
	store := &artifactstore.Store{}
	run := func(r artifacts.Ref) string {
		tool := &Tool{qualified: "s__t", server: "s", mcp: mcpclient.Tool{Name: "t"}, store: store,
			client: fixedCaller{&mcpclient.ToolResult{Text: "ok", ArtifactCount: 1, Artifacts: []artifacts.Ref{r}}}}
		res, err := tool.Run(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		return res.Text
	}
	first := run(ref("a.txt"))
	if !strings.HasSuffix(first, "artifact_read: out → s/out") {
		t.Fatalf("first result:\n%s", first)
	}
	// The same id for another file gets a suffix instead of replacing the
	// first or being dropped.
	second := run(ref("b.txt"))
	if !strings.HasSuffix(second, "artifact_read: out → s/out#2") {
		t.Fatalf("second result:\n%s", second)
	}
	for id, want := range map[string]string{"s/out": "a.txt", "s/out#2": "b.txt"} {
		r, ok := store.Lookup(id)
		if !ok || filepath.Base(r.Path) != want {
			t.Errorf("store[%q] = %+v, %v; want %s", id, r, ok, want)
		}
	}
	// The same file again is the same registration.
	if again := run(ref("a.txt")); !strings.HasSuffix(again, "out → s/out") {
		t.Fatalf("re-registration:\n%s", again)
	}
}
