package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/odekrun/odek/queue"
)

// A job's output schema is checked at enqueue for what the queue can
// know: one JSON object within MaxOutputSchemaBytes, repairs in range.
func TestEnqueueChecksOutputSchema(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	two, six, neg := 2, 6, -1
	big := `{"description":"` + strings.Repeat("x", queue.MaxOutputSchemaBytes) + `"}`
	for _, tc := range []struct {
		schema  string
		repairs *int
		want    string // "" ⇒ accepted
	}{
		{`{"type":"object"}`, nil, ""},
		{`{"type":"object"}`, &two, ""},
		{`{"type":"object"}`, &six, "output_repairs is 6"},
		{`{"type":"object"}`, &neg, "output_repairs is -1"},
		{`[1,2]`, nil, "must be a JSON object"},
		{`true`, nil, "must be a JSON object"},
		{`null`, nil, "must be a JSON object"},
		{big, nil, "MaxOutputSchemaBytes"},
		{"", &two, "output_repairs without output_schema"},
	} {
		j := queue.Job{ChatID: 1, Goal: "g", OutputRepairs: tc.repairs}
		if tc.schema != "" {
			j.OutputSchema = json.RawMessage(tc.schema)
		}
		got, _, err := q.Enqueue(context.Background(), j)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.40s: %v", tc.schema, err)
		case tc.want == "" && string(got.OutputSchema) != tc.schema:
			t.Errorf("stored schema %s", got.OutputSchema)
		case tc.want != "" && (!errors.Is(err, queue.ErrInvalidJob) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.40s: %v, want %q", tc.schema, err, tc.want)
		}
	}
}
