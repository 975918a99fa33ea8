package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/queue"
)

// tail follows the progress stream of job id until it finishes, or (id "")
// of every running job until ctx ends: one line per entry.
func (c *queueCLI) tail(ctx context.Context, id string) error {
	if id != "" {
		if _, ok, err := c.q.Inspect(ctx, id); err != nil {
			return c.fail(err)
		} else if !ok {
			return withCode(exitError, fmt.Errorf("no job %q (unknown, or finished more than the retention ago)", id))
		}
		after := ""
		for {
			done, err := c.tailOnce(ctx, id, &after, time.Second)
			if err != nil || done {
				return err
			}
		}
	}
	after := map[string]*string{}
	for ctx.Err() == nil {
		ids, err := c.q.RunningJobs(ctx, 0)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return c.fail(err)
		}
		for _, j := range ids {
			if after[j] == nil {
				after[j] = new(string)
			}
		}
		names := make([]string, 0, len(after))
		for j := range after {
			names = append(names, j)
		}
		sort.Strings(names)
		for _, j := range names {
			done, err := c.tailOnce(ctx, j, after[j], 0)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if done {
				delete(after, j)
			}
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return nil
}

// tailOnce prints the entries of job id after *after (waiting up to block
// for one) and reports whether the job has finished; its final line is
// printed then.
func (c *queueCLI) tailOnce(ctx context.Context, id string, after *string, block time.Duration) (bool, error) {
	ps, err := c.q.ReadProgress(ctx, id, *after, 100, block)
	if err != nil {
		if ctx.Err() != nil {
			return true, nil
		}
		return false, c.fail(err)
	}
	for _, p := range ps {
		*after = p.ID
		if err := c.printEntry(id, p); err != nil {
			return false, err
		}
	}
	if len(ps) == 100 {
		return false, nil // more waiting
	}
	res, ok, err := c.q.JobResult(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return true, nil
		}
		return false, c.fail(err)
	}
	if !ok {
		return false, nil
	}
	// Entries published just before the result.
	if rest, err := c.q.ReadProgress(ctx, id, *after, 1000, 0); err == nil {
		for _, p := range rest {
			*after = p.ID
			if err := c.printEntry(id, p); err != nil {
				return false, err
			}
		}
	}
	if c.a.jsonOut {
		return true, c.json(map[string]any{"job_id": id, "finished": map[string]any{"status": res.Status, "attempt": res.Attempt, "error": res.Error, "duration_ms": res.DurationMS}})
	}
	line := fmt.Sprintf("%s %s finished status=%s attempt=%d", time.Now().UTC().Format(time.RFC3339Nano), id, res.Status, res.Attempt)
	if res.Error != "" {
		line += " error=" + clipGoal(res.Error, 200)
	}
	fmt.Fprintln(c.stdout, line)
	return true, nil
}

// tailEvent is the part of an odek.event/v1 line or a progress summary
// that a tail line shows.
type tailEvent struct {
	Schema    string          `json:"schema"`
	Type      string          `json:"type"`
	Iteration int             `json:"iteration"`
	Tool      string          `json:"tool"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
	// Summary fields.
	State        string `json:"state"`
	ToolCalls    int    `json:"tool_calls"`
	LastTool     string `json:"last_tool"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	ElapsedMS    int64  `json:"elapsed_ms"`
	Outcome      string `json:"outcome"`
}

func (c *queueCLI) printEntry(id string, p queue.Progress) error {
	if c.a.jsonOut {
		ev := json.RawMessage(p.Data)
		if !json.Valid(p.Data) {
			b, _ := json.Marshal(string(p.Data))
			ev = b
		}
		return c.json(map[string]any{"job_id": id, "entry": p.ID, "event": ev})
	}
	var e tailEvent
	if json.Unmarshal(p.Data, &e) != nil {
		fmt.Fprintf(c.stdout, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), id, clipGoal(string(p.Data), 200))
		return nil
	}
	var b strings.Builder
	ts := e.Timestamp
	if ts == "" {
		ts = time.Now().UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(&b, "%s %s ", ts, id)
	if e.Schema == queue.SummarySchema {
		fmt.Fprintf(&b, "progress state=%s iteration=%d tool_calls=%d tokens=%d/%d elapsed=%dms", e.State, e.Iteration, e.ToolCalls, e.InputTokens, e.OutputTokens, e.ElapsedMS)
		if e.LastTool != "" {
			fmt.Fprintf(&b, " last_tool=%s", e.LastTool)
		}
		if e.Outcome != "" {
			fmt.Fprintf(&b, " outcome=%s", e.Outcome)
		}
	} else {
		b.WriteString(e.Type)
		if e.Iteration > 0 {
			fmt.Fprintf(&b, " iteration=%d", e.Iteration)
		}
		if e.Tool != "" {
			fmt.Fprintf(&b, " tool=%s", e.Tool)
		}
		if len(e.Data) > 0 && string(e.Data) != "{}" && string(e.Data) != "null" {
			fmt.Fprintf(&b, " %s", clipGoal(string(e.Data), 200))
		}
	}
	fmt.Fprintln(c.stdout, b.String())
	return nil
}
