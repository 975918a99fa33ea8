package host

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// eventLog is an events.Sink that keeps what it is given.
type eventLog struct {
	mu  sync.Mutex
	evs []events.Event
}

func (l *eventLog) Write(ev *events.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, *ev)
	return nil
}

func (l *eventLog) types() []events.Type {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []events.Type
	for _, e := range l.evs {
		out = append(out, e.Type)
	}
	return out
}

// A compact job (queue.KindCompact) folds the chat's saved session with
// one digest call and no agent run, reports context_compacted on the
// job's progress, and masks the worker's key in the digest; a failed
// digest call leaves the session as it was and reports run_failed with
// its class; a chat with nothing to fold is told so.
func TestJobRunnerCompactJob(t *testing.T) {
	var mu sync.Mutex
	fail, calls := false, 0
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if len(r.Tools) > 0 || r.Messages[0].Content != agent.DigestPrompt {
			t.Errorf("a compact job made a call that is not the digest side call: %d tools, system %.40q", len(r.Tools), r.Messages[0].Content)
		}
		if fail {
			return llmtest.Turn{Status: 400, ErrorMessage: "bad request; the database password was correct-horse-battery-staple-42"}
		}
		turn := llmtest.Reply("## Facts\n- the cat is Mimi; key sk-worker-key-0123456789abcdef")
		turn.Usage = &llm.Usage{PromptTokens: 500, CompletionTokens: 30}
		return turn
	})
	cfg := load(t, `{"model":"m1","base_url":"`+model.URL+`","api_key":"sk-worker-key-0123456789abcdef"}`, "")
	t.Chdir(t.TempDir())
	store := &session.FileStore{Dir: t.TempDir()}
	j := &JobRunner{Config: cfg, Sessions: store, Environ: []string{"DB_PASSWORD=correct-horse-battery-staple-42"}}
	if err := j.Start(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	job := queue.Job{ID: "compact-1", ChatID: 5, Goal: "/compact", Kind: queue.KindCompact}
	sid := JobSessionID(job)

	// No conversation yet.
	var log eventLog
	res, err := j.Run(ctx, job, &log, nil, nil)
	if err != nil || !strings.Contains(res.Answer, "no conversation") || !reflect.DeepEqual(log.types(), []events.Type{events.ContextCompacted}) {
		t.Fatalf("no session: %+v %v %v", res, err, log.types())
	}

	s := &session.Session{ID: sid, Model: "m1"}
	for _, m := range []string{"my cat is Mimi", "I live in Bonn", "I like tea", "I work at night"} {
		s.Messages = append(s.Messages, llm.Message{Role: llm.RoleUser, Content: m}, llm.Message{Role: llm.RoleAssistant, Content: "noted " + m})
	}
	if err := store.Save(ctx, s); err != nil {
		t.Fatal(err)
	}
	before := append([]llm.Message(nil), s.Messages...)

	mu.Lock()
	fail = true
	mu.Unlock()
	log = eventLog{}
	res, err = j.Run(ctx, job, &log, nil, nil)
	if err == nil || res.Status != queue.StatusFailed || !reflect.DeepEqual(log.types(), []events.Type{events.RunFailed}) {
		t.Fatalf("failed digest call: %+v %v %v", res, err, log.types())
	}
	if !strings.Contains(err.Error(), "bad request") || strings.Contains(err.Error(), "battery-staple") {
		t.Errorf("the failure's text, masked: %v", err)
	}
	if got, _ := store.Load(ctx, sid); !reflect.DeepEqual(got.Messages, before) {
		t.Fatal("a failed compaction changed the session")
	}

	mu.Lock()
	fail = false
	mu.Unlock()
	log = eventLog{}
	res, err = j.Run(ctx, job, &log, nil, nil)
	if err != nil || !reflect.DeepEqual(log.types(), []events.Type{events.ContextCompacted}) {
		t.Fatalf("compaction: %+v %v %v", res, err, log.types())
	}
	var d events.ContextCompactedData
	d.Decode(log.evs[0].Data)
	if d.FoldedGroups == 0 || d.AfterTokens >= d.BeforeTokens || d.SideCallInputTokens != 500 || d.SideCallOutputTokens != 30 {
		t.Errorf("context_compacted %+v", d)
	}
	if res.Usage.PromptTokens != 500 || res.Usage.CompletionTokens != 30 || !strings.HasPrefix(res.Answer, "Compacted: ") {
		t.Errorf("result %+v", res)
	}
	got, err := store.Load(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	var digest string
	for i := range got.Messages {
		if agent.IsDigest(&got.Messages[i]) {
			digest = got.Messages[i].Content
		}
	}
	if !strings.Contains(digest, "Mimi") || strings.Contains(digest, "0123456789abcdef") || len(got.Messages) >= len(before) {
		t.Errorf("saved session: %d messages (was %d), digest %q", len(got.Messages), len(before), digest)
	}
}

// A worker states its model's context window when it starts (issue 29),
// without asking the endpoint then: from the table for a cloud preset, or
// "asked at the first job" with the fallback for an endpoint that may
// report one.
func TestJobRunnerStartStatesTheWindow(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{`{"model":"gpt-4o-startup-probe","base_url":"https://api.openai.com/v1","api_key":"sk-x-0123456789"}`, "context_window=128000 model=gpt-4o-startup-probe source=table"},
		{`{"model":"local-thing","base_url":"http://127.0.0.1:1/v1"}`, "context window: asked of the endpoint at the first job\" model=local-thing otherwise=32768 otherwise_source=default"},
	} {
		var buf bytes.Buffer
		log := logrus.New()
		log.SetOutput(&buf)
		log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableColors: true})
		t.Chdir(t.TempDir())
		j := &JobRunner{Config: load(t, tc.conf, ""), Sessions: &session.FileStore{Dir: t.TempDir()}, Logger: log}
		if err := j.Start(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		j.Close()
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("start-up log lacks %q:\n%s", tc.want, buf.String())
		}
	}
}
