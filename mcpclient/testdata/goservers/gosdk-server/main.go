// Command gosdk-server is an MCP server written with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) for odek's interop tests. It
// serves stdio by default, or Streamable HTTP with -http ADDR (the SDK's
// own handler; it prints its URL on stdout).
//
// Tools: echo {text}; search_nodes {query} — text "Nodes searched
// successfully" with the entities only in structuredContent (the SDK's
// memory example does this); long_task {steps, ms} — one
// notifications/progress per step to the call's progressToken; sleepy {ms}
// — outlives several keep-alive pings; ping_client — pings the client
// through the SDK and says whether it answered (-keepalive, default 100ms: the
// server pings the client and drops the session when a ping fails);
// add_tool — adds "extra.tool" (the SDK sends
// notifications/tools/list_changed); files.read {path} — a dotted name;
// fail {text} — an isError result.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type searchIn struct {
	Query string `json:"query" jsonschema:"what to search for"`
}

type entity struct {
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
}

type searchOut struct {
	Entities []entity `json:"entities"`
}

type taskIn struct {
	Steps int `json:"steps" jsonschema:"number of progress steps"`
	MS    int `json:"ms,omitempty" jsonschema:"milliseconds per step"`
}

type sleepIn struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type pathIn struct {
	Path string `json:"path" jsonschema:"a path"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address")
	keepalive := flag.Duration("keepalive", 100*time.Millisecond, "interval of the server's keep-alive pings (0: none)")
	flag.Parse()
	log.SetOutput(os.Stderr)

	srv := mcp.NewServer(&mcp.Implementation{Name: "odek-interop-gosdk", Version: "1.0.0"}, &mcp.ServerOptions{
		KeepAlive: *keepalive,
		// Each ping waits interval/2 (50 ms) for its answer: on a loaded
		// CI machine one can miss. Five misses in a row still close the
		// session, within 500 ms, so a client that never answers pings
		// fails the test's 800 ms call as before.
		KeepAliveFailureThreshold: 5,
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "search_nodes", Description: "Search the knowledge graph."}, func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
		out := searchOut{Entities: []entity{{Name: "Ada_Lovelace", EntityType: "person", Observations: []string{"wrote the first program for " + in.Query}}}}
		return text("Nodes searched successfully"), out, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "long_task", Description: "Report progress, then finish."}, func(ctx context.Context, req *mcp.CallToolRequest, in taskIn) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps; i++ {
			if in.MS > 0 {
				time.Sleep(time.Duration(in.MS) * time.Millisecond)
			}
			if token != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d of %d", i, in.Steps)}); err != nil {
					return nil, nil, err
				}
			}
		}
		return text(fmt.Sprintf("done %d steps (token sent: %v)", in.Steps, token != nil)), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "sleepy", Description: "Sleep, then answer."}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return text("awake"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ping_client", Description: "Ping the client through the SDK and report the outcome."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Ping(ctx, nil); err != nil {
			return text("ping failed: " + err.Error()), nil, nil
		}
		return text("ping ok"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool", Description: "Add the tool extra.tool."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(srv, &mcp.Tool{Name: "extra.tool", Description: "Added later."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("extra"), nil, nil
		})
		return text("added extra.tool"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "files.read", Description: "A tool with a dotted name."}, func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
		return text("read " + in.Path), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Fail with the text."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("%s", in.Text)
	})

	if *addr == "" {
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	log.Fatal(http.Serve(ln, mux))
}
