package agent

import "context"

// SteerFunc returns the messages the user sent into the running run since
// the last call (issue 26, a chat's "steer" busy policy), oldest first;
// none: nil. The run calls it at each model boundary: before every model
// call and once more when the model gives a final answer, so a message is
// never put between a tool call and its result. Each message joins the
// transcript as a user message (so the saved session shows it) and the
// model answers it in the same run. It must return each message once.
type SteerFunc func(ctx context.Context) []string

type steerKey struct{}

// WithSteer returns ctx carrying f: a run started with that context asks f
// for steered messages unless its Config.Steer is set. The worker sets it
// for a job whose queue carries steer messages, so the messages cross
// processes without the run's callers knowing.
func WithSteer(ctx context.Context, f SteerFunc) context.Context {
	return context.WithValue(ctx, steerKey{}, f)
}

func steerFrom(ctx context.Context) SteerFunc {
	f, _ := ctx.Value(steerKey{}).(SteerFunc)
	return f
}

// takeSteer appends the steered messages waiting for the run to msgs and
// reports whether there were any.
func (r *run) takeSteer(ctx context.Context, msgs *[]Message) bool {
	f := r.cfg.Steer
	if f == nil {
		f = steerFrom(ctx)
	}
	if f == nil {
		return false
	}
	got := false
	for _, text := range f(ctx) {
		if text == "" {
			continue
		}
		*msgs = append(*msgs, Message{Role: RoleUser, Content: text})
		got = true
	}
	if got {
		r.log.WithField("run_id", r.runID).Info("agent: a message the user sent meanwhile joined the run")
	}
	return got
}
