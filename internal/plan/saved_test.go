package plan

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSaveRestoreRoundTrip(t *testing.T) {
	tool := NewTool(Options{})
	if tool.State().Save() != nil {
		t.Fatal("no plan must save as nil")
	}
	for _, args := range []string{
		`{"verb":"create","steps":[{"id":"a","title":"first"},{"id":"b","title":"second"}]}`,
		`{"verb":"update","updates":[{"id":"a","status":"done","note":"ok"}]}`,
	} {
		if res, err := tool.Run(context.Background(), json.RawMessage(args)); err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", args, res, err)
		}
	}
	saved := tool.State().Save()
	st, err := Restore(saved)
	if err != nil {
		t.Fatal(err)
	}
	next := NewTool(Options{Initial: st})
	if next.Block() != tool.Block() || next.State().Version != 2 {
		t.Fatalf("restored plan differs:\n%s\n---\n%s", next.Block(), tool.Block())
	}
	// The version goes on from where it was.
	if _, err := next.Run(context.Background(), json.RawMessage(`{"verb":"complete","step_id":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if v := next.State().Version; v != 3 {
		t.Fatalf("version after restore + complete = %d, want 3", v)
	}
}

func TestRestoreRejects(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":       `{`,
		"no steps":       `{"version":1,"steps":[]}`,
		"version 0":      `{"version":0,"steps":[{"id":"a","title":"t","status":"pending"}]}`,
		"bad id":         `{"version":1,"steps":[{"id":"a b","title":"t","status":"pending"}]}`,
		"duplicate id":   `{"version":1,"steps":[{"id":"a","title":"t","status":"pending"},{"id":"a","title":"u","status":"done"}]}`,
		"empty title":    `{"version":1,"steps":[{"id":"a","title":" ","status":"pending"}]}`,
		"unknown status": `{"version":1,"steps":[{"id":"a","title":"t","status":"maybe"}]}`,
		"control char":   `{"version":1,"steps":[{"id":"a","title":"t\nx","status":"pending"}]}`,
		"huge":           `{"version":1,"steps":[{"id":"a","title":"` + strings.Repeat("x", MaxArgsBytes*4) + `","status":"pending"}]}`,
	} {
		if _, err := Restore(json.RawMessage(raw)); !errors.Is(err, ErrSaved) {
			t.Errorf("%s: err = %v, want ErrSaved", name, err)
		}
	}
	if st, err := Restore(nil); err != nil || st.Version != 0 {
		t.Errorf("nil: %+v %v", st, err)
	}
}

func FuzzRestore(f *testing.F) {
	f.Add([]byte(`{"version":3,"steps":[{"id":"a","title":"t","status":"done","note":"n"}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"version":-1,"steps":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		st, err := Restore(raw)
		if err != nil {
			return
		}
		// Whatever restores saves back to something that restores the same.
		again, err := Restore(st.Save())
		if err != nil || again.Block() != st.Block() || again.Version != st.Version {
			t.Fatalf("round trip: %+v vs %+v (%v)", again, st, err)
		}
	})
}
