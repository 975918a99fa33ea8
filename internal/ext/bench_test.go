package ext_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

// BenchmarkToolRunEcho is one MCP echo call through the adapter the agent
// uses (mcpclient call + nonce'd boundary); compare with mcpclient's
// BenchmarkEchoSequential for the adapter's own cost.
func BenchmarkToolRunEcho(b *testing.B) {
	entry := `{"command":"` + mcptest.FixturePath(b) + `","auto_approve":true}`
	l := config.MCPServers{Operator: config.MCPSection{Path: "/nonexistent/config.json", Raw: json.RawMessage(`{"fx":` + entry + `}`)}}
	set, err := ext.Load(context.Background(), ext.Options{Servers: l, BaseEnv: os.Environ()})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close(context.Background())
	tool := set.Tools()[2] // fx__echo (sorted: artifact_result, bad_artifact, echo, …)
	if tool.Definition().Name != "fx__echo" {
		b.Fatal(tool.Definition().Name)
	}
	args := json.RawMessage(`{"text":"hello, extension"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Run(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
