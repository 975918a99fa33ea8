// Package sessiontest holds the contract every session.Store must satisfy,
// written once and run against each implementation (the FileStore now, a
// Redis store later).
//
// Concurrency and ownership: Run calls newStore once per subtest and uses
// each store from the test goroutine and, in the concurrency case, from a
// few goroutines at once.
package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/session"
)

// Sample returns a session with a tool-call round trip and an external ref,
// with n extra user/assistant messages.
func Sample(n int) *session.Session {
	s := &session.Session{
		ID:    session.NewID(),
		Model: "test-model",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are odek."},
			{Role: llm.RoleUser, Content: "list the files"},
			// Provider metadata that must survive a save (issue 11): DeepSeek's
			// reasoning_content, OpenRouter's reasoning_details, Gemini 3's
			// thought signature on the call.
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "it1-call0", Type: "function", Function: llm.FunctionCall{Name: "shell", Arguments: `{"cmd":"ls"}`},
				Extra: json.RawMessage(`{"extra_content":{"google":{"thought_signature":"CiQBjz1rX9bQ"}}}`)}},
				Extra: json.RawMessage(`{"reasoning_content":"List first, then read.","reasoning_details":[{"index":0,"text":"List first","type":"reasoning.text"}]}`)},
			{Role: llm.RoleTool, ToolCallID: "it1-call0", Name: "shell", Content: "a.go\nb.go\n"},
		},
		ExternalRefs: []session.ExternalRef{{Kind: "ci-run", URI: "https://ci.example.test/runs/1", CreatedBy: "ci", ReadOnly: true, CreatedAt: time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)}},
		Plan:         json.RawMessage(`{"version":2,"steps":[{"id":"a","title":"t","status":"done"}]}`),
	}
	for i := range n {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		s.Messages = append(s.Messages, llm.Message{Role: role, Content: fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog, \"quoted\" and <escaped> ✓", i)})
	}
	return s
}

// InvalidIDs are ids every Store must refuse with session.ErrInvalidID.
var InvalidIDs = []string{
	"",
	"../../etc/passwd",
	"/etc/passwd",
	"/tmp/0123456789abcdef0123456789abcdef",
	"..",
	"0123456789abcdef0123456789abcde\x00",
	"0123456789ABCDEF0123456789ABCDEF",
	"0123456789abcdef0123456789abcdef0",
	"0123456789abcdef0123456789abcde",
	"0123456789abcdef/../456789abcdef",
	"0123456789abcdef0123456789abcdeg",
	"0123456789abcdef0123456789abcd\\e",
}

// Run checks the Store contract. newStore must return an empty store.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		st := newStore(t)
		s := Sample(3)
		if err := st.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		if s.CreatedAt.IsZero() || s.UpdatedAt.IsZero() {
			t.Fatalf("Save did not stamp times: %+v", s)
		}
		got, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(s.CreatedAt) || !got.UpdatedAt.Equal(s.UpdatedAt) {
			t.Fatalf("times: got %v/%v, want %v/%v", got.CreatedAt, got.UpdatedAt, s.CreatedAt, s.UpdatedAt)
		}
		got.CreatedAt, got.UpdatedAt = s.CreatedAt, s.UpdatedAt
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
		}
		// The loaded session belongs to the caller.
		got.Messages[0].Content = "changed"
		again, err := st.Load(ctx, s.ID)
		if err != nil || again.Messages[0].Content != "You are odek." {
			t.Fatalf("store shares memory with a loaded session: %v", err)
		}
	})

	t.Run("ProviderMetadata", func(t *testing.T) {
		// What a provider requires back is stored and loaded as the same
		// wire JSON, so `odek continue` and a chat's next job can send it.
		st := newStore(t)
		s := Sample(0)
		if err := st.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(s.Messages[2])
		have, _ := json.Marshal(got.Messages[2])
		if string(want) != string(have) {
			t.Fatalf("assistant message after a round trip:\n got %s\nwant %s", have, want)
		}
		for _, key := range []string{`"reasoning_content":"List first, then read."`, `"thought_signature":"CiQBjz1rX9bQ"`, `"reasoning_details":[`} {
			if !strings.Contains(string(have), key) {
				t.Errorf("loaded message %s lost %s", have, key)
			}
		}
	})

	t.Run("SaveReplaces", func(t *testing.T) {
		st := newStore(t)
		s := Sample(0)
		if err := st.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		created := s.CreatedAt
		s.Messages = append(s.Messages, llm.Message{Role: llm.RoleAssistant, Content: "done"})
		if err := st.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := st.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) != 5 || !got.CreatedAt.Equal(created) {
			t.Fatalf("got %d messages created %v, want 5 and %v", len(got.Messages), got.CreatedAt, created)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		st := newStore(t)
		id := session.NewID()
		if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Load: %v, want ErrNotFound", err)
		}
		if err := st.Delete(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Delete: %v, want ErrNotFound", err)
		}
		if _, err := st.Latest(ctx); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Latest on empty store: %v, want ErrNotFound", err)
		}
		if l, err := st.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("List on empty store: %v, %v", l, err)
		}
	})

	t.Run("InvalidIDs", func(t *testing.T) {
		st := newStore(t)
		for _, id := range InvalidIDs {
			if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrInvalidID) {
				t.Errorf("Load(%q): %v, want ErrInvalidID", id, err)
			}
			if err := st.Delete(ctx, id); !errors.Is(err, session.ErrInvalidID) {
				t.Errorf("Delete(%q): %v, want ErrInvalidID", id, err)
			}
			s := Sample(0)
			s.ID = id
			if err := st.Save(ctx, s); !errors.Is(err, session.ErrInvalidID) {
				t.Errorf("Save(id %q): %v, want ErrInvalidID", id, err)
			}
		}
	})

	t.Run("InvalidRefRejected", func(t *testing.T) {
		st := newStore(t)
		s := Sample(0)
		s.ExternalRefs = append(s.ExternalRefs, session.ExternalRef{Kind: "BAD", URI: "x", CreatedBy: "y"})
		if err := st.Save(ctx, s); !errors.Is(err, session.ErrInvalidRef) {
			t.Fatalf("Save: %v, want ErrInvalidRef", err)
		}
		if _, err := st.Load(ctx, s.ID); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("rejected session was stored: %v", err)
		}
	})

	t.Run("LatestAndList", func(t *testing.T) {
		st := newStore(t)
		a, b := Sample(1), Sample(2)
		for _, s := range []*session.Session{a, b} {
			if err := st.Save(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		latest, err := st.Latest(ctx)
		if err != nil || latest.ID != b.ID {
			t.Fatalf("Latest = %v, %v; want %s", latest, err, b.ID)
		}
		if err := st.Save(ctx, a); err != nil {
			t.Fatal(err)
		}
		latest, err = st.Latest(ctx)
		if err != nil || latest.ID != a.ID {
			t.Fatalf("Latest after re-saving a = %v, %v; want %s", latest, err, a.ID)
		}
		list, err := st.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
			t.Fatalf("List = %+v, want a then b", list)
		}
		if list[0].MessageCount != 5 || list[1].MessageCount != 6 || list[0].Goal != "list the files" || list[0].Model != "test-model" {
			t.Fatalf("summaries: %+v", list)
		}
		if err := st.Delete(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Load(ctx, a.ID); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Load after Delete: %v", err)
		}
		if list, err := st.List(ctx); err != nil || len(list) != 1 || list[0].ID != b.ID {
			t.Fatalf("List after Delete = %+v, %v", list, err)
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		st := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		s := Sample(0)
		if err := st.Save(cctx, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("Save: %v, want context.Canceled", err)
		}
		if _, err := st.Load(cctx, s.ID); !errors.Is(err, context.Canceled) {
			t.Fatalf("Load: %v", err)
		}
		if _, err := st.List(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("List: %v", err)
		}
		if err := st.Delete(cctx, s.ID); !errors.Is(err, context.Canceled) {
			t.Fatalf("Delete: %v", err)
		}
	})

	// Readers racing a writer always see a whole session, old or new.
	t.Run("ConcurrentSaveLoad", func(t *testing.T) {
		st := newStore(t)
		s := Sample(0)
		if err := st.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		id := s.ID
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			for i := range 30 {
				w := Sample(i * 20)
				w.ID = id
				if err := st.Save(ctx, w); err != nil {
					t.Errorf("Save %d: %v", i, err)
					return
				}
			}
		})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					got, err := st.Load(ctx, id)
					if err != nil {
						t.Errorf("Load during writes: %v", err)
						return
					}
					if got.Messages[len(got.Messages)-1].Content == "" && len(got.Messages) > 4 {
						t.Errorf("torn session: %d messages", len(got.Messages))
						return
					}
				}
			})
		}
		wg.Wait()
		got, err := st.Load(ctx, id)
		if err != nil || len(got.Messages) != 4+29*20 {
			t.Fatalf("final session: %v, %d messages", err, len(got.Messages))
		}
	})
}
