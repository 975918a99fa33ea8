package llm

import "context"

// DeltaHook receives the answer text of the completions made with one
// context, as it streams: a per-run counterpart of Config.OnDelta for a
// Client shared by many runs (a worker's jobs). Install it with
// WithDeltaHook on the run's context; Complete calls it besides
// Config.OnDelta, on the same terms (answer content only, never reasoning
// or tool-call arguments; synchronously; it must not block).
type DeltaHook struct {
	// Begin is called when an attempt of a completion starts: the deltas
	// that follow are a new answer (a new call, or a retry that starts a
	// partial answer over). May be nil.
	Begin func()
	// Delta is called with each piece of answer content.
	Delta func(text string)
}

type deltaHookKey struct{}

// WithDeltaHook returns ctx carrying h for the completions made with it.
func WithDeltaHook(ctx context.Context, h *DeltaHook) context.Context {
	return context.WithValue(ctx, deltaHookKey{}, h)
}

// DeltaHookFrom returns the hook WithDeltaHook put on ctx, or nil.
func DeltaHookFrom(ctx context.Context) *DeltaHook {
	h, _ := ctx.Value(deltaHookKey{}).(*DeltaHook)
	return h
}

// onDelta is the delta callback of one attempt made with ctx: the client's
// OnDelta and ctx's hook, whichever are set (nil when neither). It tells
// the hook that an attempt begins.
func (c *Client) onDelta(ctx context.Context) func(string) {
	base := c.cfg.OnDelta
	h, _ := ctx.Value(deltaHookKey{}).(*DeltaHook)
	if h == nil {
		return base
	}
	if h.Begin != nil {
		h.Begin()
	}
	switch {
	case h.Delta == nil:
		return base
	case base == nil:
		return h.Delta
	}
	return func(s string) { base(s); h.Delta(s) }
}
