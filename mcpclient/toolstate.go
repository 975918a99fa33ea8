package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// ErrToolUnavailable: the server's current tool list (after
// notifications/tools/list_changed) no longer has the tool as it was
// listed at start-up — removed, or its definition changed since it was
// approved. Calls to it fail until a new run approves the new list.
var ErrToolUnavailable = errors.New("mcpclient: tool no longer available as approved")

// toolState is one listing of the server's tools, compared with the list
// of Start (the one approvals are given for).
type toolState struct {
	tools       []Tool
	fingerprint [32]byte
	// unavailable maps each Start tool that the listing removed or changed
	// to why.
	unavailable map[string]string
	// known is the set of Start tool names.
	known map[string]bool
}

func newToolState(start, now []Tool) *toolState {
	st := &toolState{tools: now, fingerprint: fingerprint(now), known: make(map[string]bool, len(start))}
	cur := make(map[string]*Tool, len(now))
	for i := range now {
		cur[now[i].Name] = &now[i]
	}
	for i := range start {
		t := &start[i]
		st.known[t.Name] = true
		switch n := cur[t.Name]; {
		case n == nil:
			st.setUnavailable(t.Name, "the server no longer lists it")
		case fingerprint([]Tool{*n}) != fingerprint([]Tool{*t}):
			st.setUnavailable(t.Name, "the server changed its definition since it was approved")
		}
	}
	return st
}

func (st *toolState) setUnavailable(name, why string) {
	if st.unavailable == nil {
		st.unavailable = map[string]string{}
	}
	st.unavailable[name] = why
}

// callable reports whether a Start tool may be called now.
func (st *toolState) callable(name string) error {
	if !st.known[name] {
		return ErrUnknownTool
	}
	if why, ok := st.unavailable[name]; ok {
		return fmt.Errorf("%w: %s", ErrToolUnavailable, why)
	}
	return nil
}

// ToolsChange describes a re-listing after notifications/tools/list_changed,
// against the tools of Start. Names are the server's (valid per
// ValidateToolName).
type ToolsChange struct {
	Server string
	// Added are tools the Start list did not have; they are not callable
	// in this Client's life (nobody approved them).
	Added []string
	// Removed and Changed are Start tools that are gone or whose
	// definition differs; calls to them fail with ErrToolUnavailable.
	Removed, Changed []string
	// Restored are Start tools that are callable again (listed as they
	// were approved).
	Restored []string
	// Err is set when the new list was refused (invalid name, too many
	// tools, the request failed); every tool is then unavailable.
	Err error
}

// Empty reports whether the change changes nothing for the model.
func (ch ToolsChange) Empty() bool {
	return ch.Err == nil && len(ch.Added)+len(ch.Removed)+len(ch.Changed)+len(ch.Restored) == 0
}

// String is a one-line description for the model and the operator.
func (ch ToolsChange) String() string {
	var parts []string
	list := func(label string, names []string) {
		if len(names) > 0 {
			parts = append(parts, label+": "+strings.Join(names, ", "))
		}
	}
	if ch.Err != nil {
		parts = append(parts, "its new tool list was refused, so none of its tools can be called for the rest of the run")
	}
	list("removed", ch.Removed)
	list("changed since approval, not callable", ch.Changed)
	list("new, not offered in this run (not approved)", ch.Added)
	list("available again", ch.Restored)
	return fmt.Sprintf("MCP server %q changed its tools — %s", ch.Server, strings.Join(parts, "; "))
}

// toolsChanged starts (or schedules) a re-list after
// notifications/tools/list_changed. It runs on the reader goroutine, so
// the re-list itself runs on another.
func (c *Client) toolsChanged() {
	c.relistAgain.Store(true)
	if !c.started.Load() || !c.relisting.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.relisting.Store(false)
		return
	}
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		for {
			for c.relistAgain.Swap(false) {
				c.relist()
			}
			c.relisting.Store(false)
			// A list_changed that came after the last Swap but before the
			// Store found relisting still set and returned: take it here.
			if !c.relistAgain.Load() || !c.relisting.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// relist fetches the tool list again and installs it.
func (c *Client) relist() {
	c.mu.Lock()
	cn, closed := c.conn, c.closed
	c.mu.Unlock()
	if closed || cn == nil || !cn.alive() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.lim.StartupTimeout)
	defer cancel()
	prev := c.current.Load()
	tools, err := c.listTools(ctx, cn)
	var next *toolState
	ch := ToolsChange{Server: c.cfg.Name}
	if err != nil {
		ch.Err = err
		next = &toolState{tools: prev.tools, fingerprint: prev.fingerprint, known: prev.known}
		for name := range prev.known {
			next.setUnavailable(name, "its new tool list was refused: "+err.Error())
		}
	} else {
		next = newToolState(c.tools, tools)
		for _, t := range tools {
			if !next.known[t.Name] {
				ch.Added = append(ch.Added, t.Name)
			}
		}
	}
	for name := range next.known {
		was, now := prev.unavailable[name], next.unavailable[name]
		switch {
		case err != nil:
		case now != "" && now != was:
			if strings.HasPrefix(now, "the server no longer") {
				ch.Removed = append(ch.Removed, name)
			} else {
				ch.Changed = append(ch.Changed, name)
			}
		case now == "" && was != "":
			ch.Restored = append(ch.Restored, name)
		}
	}
	// Added tools are reported while they are listed; report them again
	// only when they are new to this listing.
	prevListed := make(map[string]bool, len(prev.tools))
	for _, t := range prev.tools {
		prevListed[t.Name] = true
	}
	added := ch.Added[:0]
	for _, n := range ch.Added {
		if !prevListed[n] {
			added = append(added, n)
		}
	}
	ch.Added = added
	for _, l := range [][]string{ch.Added, ch.Removed, ch.Changed, ch.Restored} {
		sort.Strings(l)
	}
	c.current.Store(next)
	fields := logrus.Fields{"added": len(ch.Added), "removed": len(ch.Removed), "changed": len(ch.Changed), "restored": len(ch.Restored)}
	if err != nil {
		c.log.WithFields(fields).WithError(err).Warn("tools/list after list_changed refused; the server's tools are disabled")
	} else {
		c.log.WithFields(fields).Info("server tool list changed")
	}
	if !ch.Empty() && c.cfg.OnToolsChanged != nil {
		c.cfg.OnToolsChanged(ch)
	}
}

// CurrentTools returns the server's latest tool list (after any
// notifications/tools/list_changed); Tools returns the list of Start.
func (c *Client) CurrentTools() []Tool {
	return append([]Tool(nil), c.current.Load().tools...)
}

// Progress is one notifications/progress about a call.
type Progress struct {
	// Progress is the server's progress value; Total is 0 when unknown.
	Progress, Total float64
	// Message is the server's message, control characters removed and cut
	// to 200 characters (untrusted text).
	Message string
	// At is when odek received it.
	At time.Time
}

type progressKey struct{}

// WithProgress returns ctx asking Client.Call to send a progressToken and
// to pass every notifications/progress for that call to fn. fn runs on the
// connection's reader goroutine: it must return quickly and must not call
// the Client.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressFrom(ctx context.Context) func(Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn
}

func (c *Client) watchProgress(fn func(Progress)) uint64 {
	token := c.nextToken.Add(1)
	c.progressMu.Lock()
	if c.progressFns == nil {
		c.progressFns = make(map[uint64]func(Progress))
	}
	c.progressFns[token] = fn
	c.progressMu.Unlock()
	return token
}

func (c *Client) unwatchProgress(token uint64) {
	c.progressMu.Lock()
	delete(c.progressFns, token)
	c.progressMu.Unlock()
}

// progress routes one notifications/progress to its call. Unknown tokens
// (a finished call, a token odek never sent) are dropped.
func (c *Client) progress(params []byte) {
	var p struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
		Total    float64         `json:"total"`
		Message  string          `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var token uint64
	if json.Unmarshal(p.Token, &token) != nil || token == 0 {
		return
	}
	c.progressMu.Lock()
	fn := c.progressFns[token]
	c.progressMu.Unlock()
	if fn == nil {
		return
	}
	fn(Progress{Progress: p.Progress, Total: p.Total, Message: clipDisplay(p.Message, 200), At: time.Now()})
}
