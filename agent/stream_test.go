package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/redact"
)

// streamModel is a scripted StreamingModel: each call delivers its pieces
// (a nil entry is a Restart) and answers with the last attempt's text.
type streamModel struct {
	pieces []*string
	reqs   []agent.Request
}

func (m *streamModel) Complete(ctx context.Context, req agent.Request) (*agent.Response, error) {
	return m.CompleteStream(ctx, req, nil)
}

func (m *streamModel) CompleteStream(_ context.Context, req agent.Request, delta func(agent.Delta)) (*agent.Response, error) {
	m.reqs = append(m.reqs, req)
	var answer strings.Builder
	for _, p := range m.pieces {
		if p == nil {
			answer.Reset()
			if delta != nil {
				delta(agent.Delta{Restart: true})
			}
			continue
		}
		answer.WriteString(*p)
		if delta != nil {
			delta(agent.Delta{Text: *p})
		}
	}
	return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: answer.String()}}, nil
}

func pieces(ps ...string) []*string {
	out := make([]*string, len(ps))
	for i := range ps {
		if ps[i] != "\x00restart" {
			out[i] = &ps[i]
		}
	}
	return out
}

// signals records a run's answer signals: the text of each answer begun
// by SignalAnswerStart.
type signals struct {
	texts []string
	seen  []agent.SignalEvent
}

func (s *signals) handle(ev agent.SignalEvent) {
	s.seen = append(s.seen, ev)
	switch ev.Type {
	case agent.SignalAnswerStart:
		s.texts = append(s.texts, "")
	case agent.SignalAnswerDelta:
		s.texts[len(s.texts)-1] += ev.Text
	}
}

func (s *signals) all() string {
	var b strings.Builder
	for _, ev := range s.seen {
		b.WriteString(ev.Text)
	}
	return b.String()
}

const streamKey = "sk-test-0123456789abcdefXYZ"

// The answer streams out as signals masked by the run's redactor, with the
// secret cut at every offset between two pieces; while the first piece is
// all that arrived, no more than the secret's length is held back.
func TestAnswerSignalsMaskASecretCutAtEveryOffset(t *testing.T) {
	red := redact.New()
	red.AddValue(streamKey)
	text := "here it is: " + streamKey + " — done"
	keyEnd := strings.Index(text, streamKey) + len(streamKey)
	for cut := 0; cut <= len(text); cut++ {
		var sig signals
		var early string // emitted before the second piece
		first, second := text[:cut], text[cut:]
		m := &streamModel{pieces: []*string{&first, &second}}
		probe := &probeModel{m: m, before: func() { early = sig.all() }}
		_, err := agent.Run(context.Background(), agent.Config{LLM: probe, Model: "m", Redactor: red, AgentSignalHandler: sig.handle}, "go")
		if err != nil {
			t.Fatal(err)
		}
		if len(sig.texts) != 1 || sig.texts[0] != red.String(text) || strings.Contains(sig.all(), streamKey) {
			t.Fatalf("cut %d: answers %q", cut, sig.texts)
		}
		if cut < keyEnd && (!strings.HasPrefix(text, early) || len(early) < cut-len(streamKey)) {
			t.Fatalf("cut %d: %q emitted early: more than the secret's length held back", cut, early)
		}
	}
}

// probeModel calls before between the pieces of a two-piece streamModel.
type probeModel struct {
	m      *streamModel
	before func()
}

func (p *probeModel) Complete(ctx context.Context, req agent.Request) (*agent.Response, error) {
	return p.m.Complete(ctx, req)
}

func (p *probeModel) CompleteStream(ctx context.Context, req agent.Request, delta func(agent.Delta)) (*agent.Response, error) {
	n := 0
	return p.m.CompleteStream(ctx, req, func(d agent.Delta) {
		if n == 1 {
			p.before()
		}
		n++
		delta(d)
	})
}

// A retried attempt starts the answer over; what the void attempt held
// back (the start of a secret) is dropped, never flushed in clear.
func TestAnswerSignalsRestartDropsTheHeldTail(t *testing.T) {
	red := redact.New()
	red.AddValue(streamKey)
	var sig signals
	m := &streamModel{pieces: pieces("note: "+streamKey[:12], "\x00restart", "note: ", streamKey, " ok")}
	res, err := agent.Run(context.Background(), agent.Config{LLM: m, Model: "m", Redactor: red, AgentSignalHandler: sig.handle}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(sig.texts) != 2 || sig.texts[1] != red.String("note: "+streamKey+" ok") || strings.Contains(sig.all(), streamKey[:12]) {
		t.Fatalf("answers %q", sig.texts)
	}
	if res.Answer != "note: "+streamKey+" ok" {
		t.Fatalf("answer %q", res.Answer)
	}
}

// foreignRedactor is a Redactor that is not odek's: it masks "SECRET".
type foreignRedactor struct{}

func (foreignRedactor) String(s string) string { return strings.ReplaceAll(s, "SECRET", "[x]") }

// Another Redactor cannot mask a stream: the answer's text goes out whole,
// masked, at the end of the call.
func TestAnswerSignalsWithAForeignRedactor(t *testing.T) {
	var sig signals
	m := &streamModel{pieces: pieces("a SEC", "RET b")}
	if _, err := agent.Run(context.Background(), agent.Config{LLM: m, Model: "m", Redactor: foreignRedactor{}, AgentSignalHandler: sig.handle}, "go"); err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, ev := range sig.seen {
		if ev.Type == agent.SignalAnswerDelta {
			deltas++
		}
	}
	if len(sig.texts) != 1 || sig.texts[0] != "a [x] b" || deltas != 1 {
		t.Fatalf("answers %q in %d deltas", sig.texts, deltas)
	}
}

// Without a handler the model is never asked to stream.
func TestNoHandlerNoStreaming(t *testing.T) {
	m := &countingModel{streamModel: streamModel{pieces: pieces("hi")}}
	if _, err := agent.Run(context.Background(), agent.Config{LLM: m, Model: "m"}, "go"); err != nil {
		t.Fatal(err)
	}
	if m.streams != 0 {
		t.Fatalf("%d streamed calls without a handler", m.streams)
	}
}

type countingModel struct {
	streamModel
	streams int
}

func (m *countingModel) Complete(ctx context.Context, req agent.Request) (*agent.Response, error) {
	return m.streamModel.CompleteStream(ctx, req, nil)
}

func (m *countingModel) CompleteStream(ctx context.Context, req agent.Request, delta func(agent.Delta)) (*agent.Response, error) {
	m.streams++
	return m.streamModel.CompleteStream(ctx, req, delta)
}

// odek's own client streams through the same path: a key the model echoes
// reaches the signals masked.
func TestAnswerSignalsFromTheClient(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "the key is " + streamKey + ", keep it", ChunkSize: 3})
	red := redact.New()
	red.AddValue(streamKey)
	var sig signals
	if _, err := agent.Run(context.Background(), agent.Config{LLM: newClient(t, srv.URL), Model: "m", Redactor: red, AgentSignalHandler: sig.handle}, "go"); err != nil {
		t.Fatal(err)
	}
	if len(sig.texts) != 1 || sig.texts[0] != red.String("the key is "+streamKey+", keep it") || len(sig.seen) < 4 {
		t.Fatalf("answers %q in %d signals", sig.texts, len(sig.seen))
	}
}

// refusingModel refuses any request that carries images.
type refusingModel struct{ reqs []agent.Request }

func (m *refusingModel) Complete(_ context.Context, req agent.Request) (*agent.Response, error) {
	m.reqs = append(m.reqs, req)
	for _, msg := range req.Messages {
		if len(msg.Images) > 0 {
			return nil, errors.Join(errors.New("HTTP 400: image_url is not supported"), agent.ErrImagesRefused)
		}
	}
	return &agent.Response{Message: agent.Message{Content: "no picture, but hello"}}, nil
}

// The goal's images go with the goal's message; a refusal ends the run
// unless DropRefusedImages, which asks once more without them. A saved
// message never holds them.
func TestGoalImages(t *testing.T) {
	imgs := []agent.Image{{MediaType: "image/png", Data: []byte("png")}}
	m := &refusingModel{}
	_, err := agent.Run(context.Background(), agent.Config{LLM: m, Model: "m", GoalImages: imgs}, "look")
	if !errors.Is(err, agent.ErrImagesRefused) || len(m.reqs) != 1 {
		t.Fatalf("strict: err %v after %d calls", err, len(m.reqs))
	}
	last := m.reqs[0].Messages[len(m.reqs[0].Messages)-1]
	if last.Content != "look" || len(last.Images) != 1 {
		t.Fatalf("goal message %+v", last)
	}
	m = &refusingModel{}
	res, err := agent.Run(context.Background(), agent.Config{LLM: m, Model: "m", GoalImages: imgs, DropRefusedImages: true}, "look")
	if err != nil || res.Answer != "no picture, but hello" || len(m.reqs) != 2 {
		t.Fatalf("optional: %v %q after %d calls", err, res.Answer, len(m.reqs))
	}
	b, err := json.Marshal(agent.Message{Role: agent.RoleUser, Content: "look", Images: imgs})
	if err != nil || string(b) != `{"role":"user","content":"look"}` {
		t.Fatalf("saved form %s %v", b, err)
	}
}
