package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/odekrun/odek/mcpclient"
)

// Event names a point of the run where hooks fire.
type Event string

// Events.
const (
	SessionStart  Event = "session_start"  // before the first model call
	UserPrompt    Event = "user_prompt"    // the goal; exit 2 refuses the run
	PreTool       Event = "pre_tool"       // before a tool call runs; exit 2 blocks it
	PostTool      Event = "post_tool"      // after a tool call, with its result
	Stop          Event = "stop"           // the run produced its final answer
	SessionEnd    Event = "session_end"    // the run ended, however
	SubagentStart Event = "subagent_start" // a delegated task starts
	SubagentStop  Event = "subagent_stop"  // a delegated task ended
)

// Events lists every event.
var Events = []Event{SessionStart, UserPrompt, PreTool, PostTool, Stop, SessionEnd, SubagentStart, SubagentStop}

// Limits.
const (
	DefaultTimeout = 10 * time.Second
	MaxTimeout     = 600 * time.Second
	// MaxHooksPerEvent bounds the hooks of one event.
	MaxHooksPerEvent = 16
	// MaxOutputBytes bounds what is kept of a command's stdout and of its
	// stderr, and of an HTTP answer's body.
	MaxOutputBytes = 64 << 10
	// MaxReasonChars bounds the reason shown to the model.
	MaxReasonChars = 2000
	// MaxInputBytes bounds the JSON sent to a hook (long tool results are
	// clipped to fit).
	MaxInputBytes = 256 << 10
)

// ErrConfig: the hooks section is unusable; the error names the field.
var ErrConfig = errors.New("hooks: invalid hooks section")

// Hook is one configured hook: a command or an HTTP endpoint.
type Hook struct {
	// Command is the argv of a command hook (the first element an
	// absolute path or a name looked up in PATH).
	Command []string `json:"command"`
	// URL is an HTTP hook's endpoint (https://, or http:// to loopback).
	URL string `json:"url"`
	// Headers are sent with an HTTP hook's POST.
	Headers map[string]string `json:"headers"`
	// Tools and Classes match pre_tool and post_tool hooks: the tool's
	// name against path.Match patterns, its danger class exactly. Empty ⇒
	// every tool / class. Both set ⇒ both must match.
	Tools   []string `json:"tools"`
	Classes []string `json:"classes"`
	// TimeoutSeconds bounds one invocation; 0 ⇒ DefaultTimeout.
	TimeoutSeconds float64 `json:"timeout_seconds"`

	timeout time.Duration
}

// Name identifies the hook in events and logs (argv0 or the URL's host
// and path).
func (h *Hook) Name() string {
	if len(h.Command) > 0 {
		return clip(h.Command[0], 200)
	}
	return mcpclient.RedactURL(h.URL)
}

// Timeout is the effective timeout.
func (h *Hook) Timeout() time.Duration { return h.timeout }

// Matches reports whether a tool hook applies to the call.
func (h *Hook) Matches(tool, class string) bool {
	if len(h.Classes) > 0 && !slices.Contains(h.Classes, class) {
		return false
	}
	if len(h.Tools) == 0 {
		return true
	}
	for _, p := range h.Tools {
		if ok, _ := path.Match(p, tool); ok {
			return true
		}
	}
	return false
}

// Config is the operator's hooks, by event.
type Config struct {
	Hooks map[Event][]Hook
}

// Has reports whether any hook is configured for ev.
func (c *Config) Has(ev Event) bool { return c != nil && len(c.Hooks[ev]) > 0 }

// FromConfig parses the "hooks" object of the operator file (the whole
// file's raw JSON; nil or no section ⇒ nil, no hooks). Only the operator
// file is read: a project file cannot add, change or remove a hook. A
// pure function; errors wrap ErrConfig and name the event, the index and
// the field.
func FromConfig(operatorFile json.RawMessage) (*Config, error) {
	if len(operatorFile) == 0 {
		return nil, nil
	}
	var f struct {
		Hooks map[string][]Hook `json:"hooks"`
	}
	if err := json.Unmarshal(operatorFile, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if len(f.Hooks) == 0 {
		return nil, nil
	}
	c := &Config{Hooks: map[Event][]Hook{}}
	for name, hs := range f.Hooks {
		ev := Event(name)
		if !slices.Contains(Events, ev) {
			return nil, fmt.Errorf("%w: hooks.%s is not an event (want one of %s)", ErrConfig, clip(name, 40), eventList())
		}
		if len(hs) > MaxHooksPerEvent {
			return nil, fmt.Errorf("%w: hooks.%s has %d hooks, limit %d", ErrConfig, name, len(hs), MaxHooksPerEvent)
		}
		for i := range hs {
			h := &hs[i]
			bad := func(format string, a ...any) error {
				return fmt.Errorf("%w: hooks.%s[%d]: "+format, append([]any{ErrConfig, name, i}, a...)...)
			}
			switch {
			case len(h.Command) > 0 && h.URL != "":
				return nil, bad("command and url are both set")
			case len(h.Command) == 0 && h.URL == "":
				return nil, bad("command (an argv list) or url is required")
			case len(h.Command) > 0 && h.Command[0] == "":
				return nil, bad("command[0] is empty")
			case h.URL != "":
				if err := mcpclient.CheckURL(h.URL, false); err != nil {
					return nil, bad("url %s: %v", mcpclient.RedactURL(h.URL), err)
				}
				for k, v := range h.Headers {
					if strings.ContainsAny(k+v, "\r\n\x00") || k == "" {
						return nil, bad("headers[%q] has CR, LF or NUL, or an empty name", clip(k, 40))
					}
				}
			case len(h.Headers) > 0:
				return nil, bad("headers need url")
			}
			for _, a := range h.Command {
				if strings.IndexByte(a, 0) >= 0 {
					return nil, bad("command has a NUL byte")
				}
			}
			if (len(h.Tools) > 0 || len(h.Classes) > 0) && ev != PreTool && ev != PostTool {
				return nil, bad("tools and classes match tool calls: only pre_tool and post_tool hooks take them")
			}
			for _, p := range h.Tools {
				if _, err := path.Match(p, ""); err != nil {
					return nil, bad("tools pattern %q: %v", clip(p, 80), err)
				}
			}
			switch {
			case h.TimeoutSeconds < 0:
				return nil, bad("timeout_seconds=%v is negative", h.TimeoutSeconds)
			case h.TimeoutSeconds == 0:
				h.timeout = DefaultTimeout
			case time.Duration(h.TimeoutSeconds*float64(time.Second)) > MaxTimeout:
				return nil, bad("timeout_seconds=%v is above the limit %v", h.TimeoutSeconds, MaxTimeout.Seconds())
			default:
				h.timeout = time.Duration(h.TimeoutSeconds * float64(time.Second))
			}
		}
		c.Hooks[ev] = hs
	}
	return c, nil
}

func eventList() string {
	s := make([]string, len(Events))
	for i, e := range Events {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}
