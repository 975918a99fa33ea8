package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/agent"
)

// The policy types and Authorize are the agent package's; see there.
type (
	// Action is what the policy does with a call of some class.
	Action = agent.Action
	// Policy maps danger classes to actions.
	Policy = agent.Policy
	// Prompter asks a person to confirm one call.
	Prompter = agent.Prompter
	// PrompterFunc adapts a function to Prompter.
	PrompterFunc = agent.PrompterFunc
)

// Actions.
const (
	ActionAllow  = agent.ActionAllow
	ActionPrompt = agent.ActionPrompt
	ActionDeny   = agent.ActionDeny
)

// DefaultPolicy allows safe and local_write, denies destructive, unknown
// and blocked, prompts for the rest, and denies prompts when nobody can be
// asked.
func DefaultPolicy() Policy { return agent.DefaultPolicy() }

// Authorize decides whether tool may run a call assessed as a (see
// agent.Authorize).
func Authorize(ctx context.Context, p Policy, pr Prompter, tool string, a Assessment) (allowed bool, reason string) {
	return agent.Authorize(ctx, p, pr, tool, a)
}

// ttyPrompter asks on the controlling terminal. One prompt at a time.
type ttyPrompter struct {
	mu sync.Mutex
	f  *os.File
}

// NewTTYPrompter opens /dev/tty for prompts; ok is false when the process
// has no controlling terminal. Prompts are serialised, so concurrent tool
// calls ask one after another; the answer is yes only for "y" or "yes"
// (any case), and anything else, including an empty line, is no. The
// terminal stays open for the life of the process.
func NewTTYPrompter() (Prompter, bool) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	return &ttyPrompter{f: f}, true
}

// Confirm writes question and reads one line. A done ctx interrupts the
// read and returns ctx.Err().
func (t *ttyPrompter) Confirm(ctx context.Context, question string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return confirmOn(ctx, t.f, question)
}

// deadliner is the part of *os.File that confirmOn needs to honour ctx.
type deadliner interface {
	Read([]byte) (int, error)
	Write([]byte) (int, error)
	SetReadDeadline(time.Time) error
}

// maxAnswer bounds the answer line; longer lines are read to the end and
// count as no.
const maxAnswer = 64

func confirmOn(ctx context.Context, f deadliner, question string) (bool, error) {
	if _, err := f.Write([]byte(question)); err != nil {
		return false, fmt.Errorf("tools: write prompt: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer func() {
		stop()
		_ = f.SetReadDeadline(time.Time{})
	}()
	var line []byte
	var b [1]byte
	for {
		n, err := f.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			if len(line) < maxAnswer {
				line = append(line, b[0])
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return false, err
			}
			return false, fmt.Errorf("tools: read answer: %w", err)
		}
	}
	ans := strings.ToLower(strings.TrimSpace(string(line)))
	return ans == "y" || ans == "yes", nil
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
