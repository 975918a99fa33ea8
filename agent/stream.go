package agent

import (
	"context"
	"strings"

	"github.com/odekrun/odek/internal/redact"
)

// complete makes iteration iter's model call. With an AgentSignalHandler
// and a StreamingModel the answer streams out as signals, through the
// run's Redactor (answerStream); otherwise it is one Complete call.
func (r *run) complete(ctx context.Context, iter int, msgs []Message) (*Response, error) {
	sm, ok := r.cfg.LLM.(StreamingModel)
	if !ok || r.cfg.AgentSignalHandler == nil {
		return r.cfg.LLM.Complete(ctx, r.request(msgs))
	}
	a := r.newAnswerStream(iter)
	a.start()
	resp, err := sm.CompleteStream(ctx, r.request(msgs), a.delta)
	if err == nil {
		a.flush()
	}
	return resp, err
}

// answerStream turns one model call's streamed pieces into redacted
// SignalAnswerDelta signals. odek's redactor masks them as a stream
// (redact.Stream: it holds back only what may still become a secret);
// any other Redactor gets each attempt's whole text at its end, since
// only String of the whole text is known to be safe. What an attempt
// holds back when it turns out void (a Restart, a failed call) is dropped,
// never flushed: it may be the start of a secret that never finished.
// Used from one goroutine at a time (StreamingModel's contract, then the
// loop's).
type answerStream struct {
	r      *run
	iter   int
	red    *redact.Redactor // odek's redactor; nil for another
	stream *redact.Stream   // the current attempt's, with red
	whole  strings.Builder  // the current attempt's text, without red
}

func (r *run) newAnswerStream(iter int) *answerStream {
	a := &answerStream{r: r, iter: iter}
	a.red, _ = r.cfg.Redactor.(*redact.Redactor)
	return a
}

func (a *answerStream) signal(typ SignalType, text string) {
	a.r.cfg.AgentSignalHandler(SignalEvent{Type: typ, RunID: a.r.runID, Iteration: a.iter, Text: text})
}

func (a *answerStream) emit(text string) { a.signal(SignalAnswerDelta, text) }

// start begins an attempt's text, dropping what the previous one held.
func (a *answerStream) start() {
	if a.red != nil {
		a.stream = a.red.NewStream(a.emit)
	}
	a.whole.Reset()
	a.signal(SignalAnswerStart, "")
}

func (a *answerStream) delta(d Delta) {
	if d.Restart {
		a.start()
	}
	if d.Text == "" {
		return
	}
	if a.stream != nil {
		a.stream.Write(d.Text)
		return
	}
	a.whole.WriteString(d.Text)
}

// flush emits what the current attempt holds back: its text is whole.
func (a *answerStream) flush() {
	if a.stream != nil {
		a.stream.Flush()
		return
	}
	if a.whole.Len() > 0 {
		a.emit(a.r.cfg.Redactor.String(a.whole.String()))
		a.whole.Reset()
	}
}

// dropImages removes the images of msgs in place; it reports whether
// there were any.
func dropImages(msgs []Message) bool {
	found := false
	for i := range msgs {
		if msgs[i].Images != nil {
			msgs[i].Images, found = nil, true
		}
	}
	return found
}
