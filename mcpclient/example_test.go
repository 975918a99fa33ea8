package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

// Start spawns an MCP server over stdio (here the fixture server of the
// contract tests, built on first use), runs the handshake and lists its
// tools; Call invokes one and returns its result rendered for the model.
// The server gets only the environment in Env: FilterEnv drops secrets.
func Example() {
	bin, err := mcptest.BuildFixture()
	if err != nil {
		fmt.Println("build:", err)
		return
	}
	env, _ := mcpclient.FilterEnv(os.Environ(), nil, mcpclient.LooksSecret)
	ctx := context.Background()
	c, err := mcpclient.Start(ctx, mcpclient.ServerConfig{
		Name: "fixture", Command: bin, Env: env, Timeout: 10 * time.Second, StartupTimeout: 20 * time.Second,
	})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close(ctx)
	for _, t := range c.Tools()[:2] {
		fmt.Println("tool:", mcpclient.QualifiedName("fixture", t.Name))
	}
	res, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"hello from odek"}`))
	if err != nil {
		fmt.Println("call:", err)
		return
	}
	fmt.Println(res.Text, res.IsError)
	// Output:
	// tool: fixture__echo
	// tool: fixture__large_result
	// hello from odek false
}
