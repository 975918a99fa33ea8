package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
)

// BenchmarkLoopIteration measures the in-process cost of one loop
// iteration (model call over loopback HTTP with streaming, a small
// read_file, events to a discarding sink), fake server included.
func BenchmarkLoopIteration(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "small.txt"), []byte(strings.Repeat("x", 199)+"\n"), 0o644)
	const iters = 50
	srv := llmtest.NewHandler(b, func(r llmtest.Recorded) llmtest.Turn {
		n := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool {
				n++
			}
		}
		if n >= iters {
			return llmtest.Reply("done")
		}
		return llmtest.Turn{ChunkSize: 64, ToolCalls: []llmtest.Call{{ID: "c" + strconv.Itoa(n), Name: "read_file", Arguments: `{"path":"small.txt"}`}}}
	})
	client, _ := llm.New(llm.Config{BaseURL: srv.URL})
	red := redact.New()
	red.AddFromEnv(os.Environ())
	cfg := agent.Config{LLM: client, Model: "m", Tools: tools.Builtins(tools.Options{WorkDir: dir}),
		EventSink: events.SinkFunc(func(*events.Event) error { return nil }), Redactor: red}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := agent.Run(context.Background(), cfg, "read"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*(iters+1)), "µs/iteration")
}
