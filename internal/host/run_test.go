package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/session"
)

func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status string
		code   int
	}{
		{nil, StatusSuccess, ExitOK},
		{fmt.Errorf("run: %w", &budget.ExceededError{Limit: "max_tool_calls", Observed: 3, Max: 2}), StatusBudgetExhausted, ExitBudget},
		{fmt.Errorf("x: %w", context.Canceled), StatusCanceled, ExitCancelled},
		{errors.New("model failed"), StatusError, ExitError},
		{context.DeadlineExceeded, StatusError, ExitError},
	} {
		if s, c := OutcomeOf(tc.err); s != tc.status || c != tc.code {
			t.Errorf("OutcomeOf(%v) = %s %d, want %s %d", tc.err, s, c, tc.status, tc.code)
		}
	}
}

// TestHostRuns: one Host, built once, serves several runs, each its own
// session, budget and redaction, with the same LLM client.
func TestHostRuns(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "first sk-host-run-secret-987654"}, llmtest.Turn{Content: "second"})
	cfg := load(t, `{"model":"m1","base_url":"`+srv.URL+`","api_key":"sk-host-run-secret-987654"}`, "")
	h, err := New(context.Background(), cfg, HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	store := &session.FileStore{Dir: t.TempDir()}
	sess := session.New("m1", time.Now())
	oc, err := h.Run(context.Background(), RunSpec{Goal: "one", WorkDir: t.TempDir(), Session: sess, Store: store})
	if err != nil || oc.Status != StatusSuccess || oc.ExitCode != ExitOK || oc.SessionID != sess.ID || oc.Iterations != 1 {
		t.Fatalf("first run: %+v %v", oc, err)
	}
	if strings.Contains(oc.Answer, "987654") {
		t.Fatalf("answer not redacted: %q", oc.Answer)
	}
	saved, err := store.Load(context.Background(), sess.ID)
	if err != nil || len(saved.Messages) < 2 {
		t.Fatalf("session not saved: %+v %v", saved, err)
	}
	oc, err = h.Run(context.Background(), RunSpec{Goal: "two", WorkDir: t.TempDir(), Lower: budget.Limits{MaxToolCalls: 1}})
	if err != nil || oc.Answer != "second" || oc.SessionID != "" {
		t.Fatalf("second run: %+v %v", oc, err)
	}
	if _, err := h.Run(context.Background(), RunSpec{Goal: "x", Session: sess}); !errors.Is(err, ErrSetup) {
		t.Fatalf("session without a store: %v, want ErrSetup", err)
	}
	if _, err := h.Run(context.Background(), RunSpec{Goal: "x", Confine: true}); !errors.Is(err, ErrSetup) {
		t.Fatalf("confined run on a Host without Confine: %v, want ErrSetup", err)
	}
	if _, err := New(context.Background(), nil, HostOptions{}); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("nil config: %v", err)
	}
}
