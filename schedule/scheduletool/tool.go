// Package scheduletool is the model's schedule tool: it creates, lists
// and cancels the schedules of the chat its job belongs to, so "remind me
// tomorrow at 9 to renew the domain" or "every weekday at 8 summarise the
// open issues" works in words.
//
// Every change (create, cancel, pause, resume) is shown to the chat and
// needs the user's yes on an inline keyboard, whatever the operator's
// tool policy says: a prompt-injected file must not plant a recurring
// job. The question goes through the job's approver (the worker's, which
// asks the chat over the queue); a scheduled job's approver never says
// yes to this tool (schedule.Confirm), so a schedule cannot make more
// schedules. The tool sees and touches only its job's chat: the chat and
// user come from the job, never from the model's arguments.
//
// A Tool is built per job (New) and is safe for concurrent use.
package scheduletool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
)

// Tool is one job's schedule tool.
type Tool struct {
	sv     *schedule.Service
	owner  schedule.Owner
	ask    agent.Prompter
	budget *queue.Budget
	model  string
}

// New returns the schedule tool of job: its chat and user own what it
// creates; ask confirms changes (nil: nobody can, so changes are refused).
// The schedules it creates run with job's budget and model.
func New(sv *schedule.Service, job queue.Job, ask agent.Prompter) *Tool {
	return &Tool{sv: sv, owner: schedule.Owner{ChatID: job.ChatID, UserID: job.UserID}, ask: ask, budget: job.Budget, model: job.Model}
}

// Definition implements agent.Tool.
func (t *Tool) Definition() agent.Definition {
	return agent.Definition{
		Name: schedule.ToolName,
		Description: "Create, list or cancel schedules of this chat: work that starts later or repeats, without a message. " +
			"kind \"message\" sends the text as a reminder at that time (no model); kind \"goal\" runs the text as a task then and posts the answer. " +
			"when: \"in 20m\", \"at 18:00\", \"tomorrow 9:00\", \"at 2026-12-24 18:00\", \"daily 9:00\", \"weekdays 8:00\", \"mon 9:00\", \"every 2h\" or a 5-field cron expression, in the chat's time zone. " +
			"quiet: a check-in whose answer is posted only when there is something to report. " +
			"Creating, pausing, resuming or cancelling asks the user to confirm; say so in your answer.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["create","list","cancel","pause","resume"]},` +
			`"when":{"type":"string","description":"when it fires (create)"},` +
			`"text":{"type":"string","description":"the reminder text or the task (create)"},` +
			`"kind":{"type":"string","enum":["message","goal"],"description":"default message"},` +
			`"quiet":{"type":"boolean","description":"goal only: post the answer only when there is something to report"},` +
			`"id":{"type":"string","description":"the schedule's id (cancel, pause, resume)"}},` +
			`"required":["action"],"additionalProperties":false}`),
	}
}

type args struct {
	Action string `json:"action"`
	When   string `json:"when"`
	Text   string `json:"text"`
	Kind   string `json:"kind"`
	Quiet  bool   `json:"quiet"`
	ID     string `json:"id"`
}

func parse(raw json.RawMessage) (args, error) {
	var a args
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("schedule: arguments: %v", err)
	}
	switch a.Action {
	case "create", "list", "cancel", "pause", "resume":
	default:
		return a, fmt.Errorf("schedule: action %q: want create, list, cancel, pause or resume", clip(a.Action, 20))
	}
	switch a.Kind {
	case "", "message", "goal":
	default:
		return a, fmt.Errorf("schedule: kind %q: want message or goal", clip(a.Kind, 20))
	}
	return a, nil
}

// Assess implements agent.Tool. The tool's own confirmation (in Run)
// is what guards changes, so the policy sees a safe call: asking twice
// would teach people to click yes.
func (t *Tool) Assess(raw json.RawMessage) (agent.Assessment, error) {
	a, err := parse(raw)
	if err != nil {
		return agent.Assessment{}, err
	}
	return agent.Assessment{Class: agent.ClassSafe, Summary: map[string]any{"action": a.Action}}, nil
}

// Run implements agent.Tool.
func (t *Tool) Run(ctx context.Context, raw json.RawMessage) (agent.ToolResult, error) {
	a, err := parse(raw)
	if err != nil {
		return agent.ToolResult{}, err
	}
	switch a.Action {
	case "list":
		return t.list(ctx)
	case "create":
		return t.create(ctx, a)
	}
	return t.change(ctx, a)
}

func result(s string) agent.ToolResult { return agent.ToolResult{Text: s} }

func (t *Tool) now() time.Time {
	if t.sv.Now != nil {
		return t.sv.Now()
	}
	return time.Now()
}

func (t *Tool) list(ctx context.Context) (agent.ToolResult, error) {
	list, err := t.sv.List(ctx, t.owner)
	if err != nil {
		return agent.ToolResult{}, err
	}
	type item struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Spec    string `json:"spec"`
		TZ      string `json:"tz,omitempty"`
		Text    string `json:"text"`
		Enabled bool   `json:"enabled"`
		Next    string `json:"next,omitempty"`
		Quiet   bool   `json:"quiet,omitempty"`
	}
	out := []item{}
	for _, s := range list {
		it := item{ID: s.ID, Kind: string(s.Kind), Spec: s.Spec, TZ: s.TZ, Text: clip(s.Text, 200), Enabled: s.Enabled, Quiet: s.Quiet}
		if !s.Next.IsZero() {
			it.Next = s.Next.Format(time.RFC3339)
		}
		out = append(out, it)
	}
	b, _ := json.Marshal(out)
	return result(string(b)), nil
}

// confirm asks the chat; false with a reason when the user (or nobody)
// said yes.
func (t *Tool) confirm(ctx context.Context, fields string) (bool, string) {
	if t.ask == nil {
		return false, "nobody can confirm schedule changes here, so none was made"
	}
	ok, err := t.ask.Confirm(ctx, "odek: allow "+schedule.ToolName+" (schedule, "+fields+")? [y/N] ")
	switch {
	case errors.Is(err, schedule.ErrNonInteractive):
		return false, "a scheduled job cannot change schedules (nobody is there to confirm)"
	case err != nil:
		return false, "the confirmation failed: " + err.Error()
	case !ok:
		return false, "the user declined; nothing was changed"
	}
	return true, ""
}

// summary cleans a value for the confirmation line: one line, no ", "
// that would read as another field, bounded.
func summary(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, ", ", "; ")
	return clip(s, n)
}

func (t *Tool) create(ctx context.Context, a args) (agent.ToolResult, error) {
	if strings.TrimSpace(a.When) == "" || strings.TrimSpace(a.Text) == "" {
		return agent.ToolResult{}, errors.New("schedule: create needs when and text")
	}
	tz, err := t.sv.Zone(ctx, t.owner)
	if err != nil {
		return agent.ToolResult{}, err
	}
	now := t.now()
	spec, rest, err := schedule.SplitSpec(a.When, tz, now)
	if err != nil {
		return agent.ToolResult{}, err
	}
	if strings.TrimSpace(rest) != "" {
		return agent.ToolResult{}, fmt.Errorf("schedule: when %q: %q was not understood as part of the time; put the task in text", clip(a.When, 60), clip(rest, 40))
	}
	kind := schedule.KindMessage
	if a.Kind == "goal" {
		kind = schedule.KindGoal
	}
	s := schedule.Schedule{ChatID: t.owner.ChatID, UserID: t.owner.UserID, Kind: kind, Spec: spec, TZ: tz, Text: a.Text,
		Quiet: a.Quiet && kind == schedule.KindGoal, Budget: t.budget, Model: t.model}
	// Validate (limits, spec) before asking: the user is not asked about
	// a schedule that would be refused.
	p, _, err := schedule.Prepare(s, t.sv.Limits, now)
	if err != nil {
		return agent.ToolResult{}, err
	}
	loc, _ := schedule.LoadZone(tz)
	fields := fmt.Sprintf("action=create, kind=%s, when=%s, next=%s, text=%s", kind, summary(p.Spec, 60), p.Next.In(loc).Format("Mon 2 Jan 15:04 MST"), summary(a.Text, 300))
	if s.Quiet {
		fields += ", quiet=yes"
	}
	if ok, why := t.confirm(ctx, fields); !ok {
		return result("Not scheduled: " + why + "."), nil
	}
	made, err := t.sv.Create(ctx, t.owner, s)
	if err != nil {
		return agent.ToolResult{}, err
	}
	return result(fmt.Sprintf("Scheduled %s (%s); next fire %s. The user can see it with /schedule.", made.ID, made.Spec, made.Next.In(loc).Format(time.RFC3339))), nil
}

func (t *Tool) change(ctx context.Context, a args) (agent.ToolResult, error) {
	if a.ID == "" {
		return agent.ToolResult{}, fmt.Errorf("schedule: %s needs id (list shows them)", a.Action)
	}
	s, err := t.sv.Get(ctx, t.owner, a.ID)
	if err != nil {
		return agent.ToolResult{}, err
	}
	if ok, why := t.confirm(ctx, fmt.Sprintf("action=%s, id=%s, when=%s, text=%s", a.Action, s.ID, summary(s.Spec, 60), summary(s.Text, 200))); !ok {
		return result("Not changed: " + why + "."), nil
	}
	switch a.Action {
	case "cancel":
		err = t.sv.Delete(ctx, t.owner, a.ID)
	case "pause":
		_, err = t.sv.Pause(ctx, t.owner, a.ID)
	case "resume":
		_, err = t.sv.Resume(ctx, t.owner, a.ID)
	}
	if err != nil {
		return agent.ToolResult{}, err
	}
	return result(fmt.Sprintf("Schedule %s: %s done.", a.ID, a.Action)), nil
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
