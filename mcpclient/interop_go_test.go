package mcpclient_test

// Interop tests against MCP servers built with the two Go SDKs
// (mcpclient/testdata/goservers, a module of its own): the official
// github.com/modelcontextprotocol/go-sdk over stdio and behind its
// Streamable HTTP handler, and github.com/mark3labs/mcp-go over stdio.
// They skip when the pinned SDKs are not in the module cache unless
// ODEK_REQUIRE_GO_INTEROP is set (CI sets it).

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

// goSDKClients starts gosdk-server over both transports.
func goSDKClients(t *testing.T, mut func(*mcpclient.ServerConfig)) map[string]*mcpclient.Client {
	t.Helper()
	stdio := mcptest.GoServerConfig(t, "gosdk", "gosdk-server")
	web := mcptest.HTTPConfig(t, "gosdkweb", mcptest.GoHTTPServer(t))
	if mut != nil {
		mut(&stdio)
		mut(&web)
	}
	return map[string]*mcpclient.Client{"stdio": mcptest.Start(t, stdio), "http": mcptest.Start(t, web)}
}

func TestInteropGoSDK(t *testing.T) {
	changes := make(chan mcpclient.ToolsChange, 4)
	clients := goSDKClients(t, func(c *mcpclient.ServerConfig) {
		c.OnToolsChanged = func(ch mcpclient.ToolsChange) { changes <- ch }
	})
	for transport, c := range clients {
		t.Run(transport, func(t *testing.T) {
			if info := c.Info(); info.Name != "odek-interop-gosdk" || info.ProtocolVersion != mcpclient.ProtocolVersion {
				t.Fatalf("info %+v", info)
			}
			if r := call(t, c, "echo", `{"text":"hi"}`); r.Text != "hi" {
				t.Fatalf("echo %q", r.Text)
			}
			// Defect 3: the memory example's data only in structuredContent.
			r := call(t, c, "search_nodes", `{"query":"the engine"}`)
			mustContain(t, r.Text, "Nodes searched successfully", `"name":"Ada_Lovelace"`, "wrote the first program for the engine")
			// Dotted names are listed and callable.
			if r := call(t, c, "files.read", `{"path":"/x"}`); r.Text != "read /x" {
				t.Fatalf("files.read %q", r.Text)
			}
			// isError framed.
			r = call(t, c, "fail", `{"text":"boom"}`)
			if !r.IsError || !strings.HasPrefix(r.Text, mcpclient.ErrorFraming(c.Name(), "fail")) || !strings.Contains(r.Text, "boom") {
				t.Fatalf("fail %+v", r)
			}
			// Progress to the call's token.
			var mu sync.Mutex
			var got []mcpclient.Progress
			ctx := mcpclient.WithProgress(context.Background(), func(p mcpclient.Progress) { mu.Lock(); got = append(got, p); mu.Unlock() })
			res, err := c.Call(ctx, "long_task", json.RawMessage(`{"steps":3}`))
			if err != nil || !strings.Contains(res.Text, "token sent: true") {
				t.Fatalf("long_task %+v %v", res, err)
			}
			mu.Lock()
			if len(got) != 3 || got[2].Progress != 3 || got[2].Total != 3 || got[2].Message != "step 3 of 3" {
				t.Fatalf("progress %+v", got)
			}
			mu.Unlock()
			// Defect 1: the SDK's own ping gets an empty result.
			if r := call(t, c, "ping_client", `{}`); r.Text != "ping ok" {
				t.Fatalf("ping_client %q", r.Text)
			}
			// The server also pings every 100ms (keep-alive); a call
			// outliving many pings and the next one must work.
			if r := call(t, c, "sleepy", `{"ms":800}`); r.Text != "awake" {
				t.Fatalf("sleepy %q", r.Text)
			}
			if r := call(t, c, "echo", `{"text":"still here"}`); r.Text != "still here" {
				t.Fatalf("after keep-alive pings: %q", r.Text)
			}
			// list_changed: the new tool is reported, never callable.
			call(t, c, "add_tool", `{}`)
			select {
			case ch := <-changes:
				if len(ch.Added) != 1 || ch.Added[0] != "extra.tool" || ch.Server != c.Name() {
					t.Fatalf("change %+v", ch)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no re-list after the go-sdk's list_changed")
			}
			if err := callErr(t, c, "extra.tool", `{}`); !errors.Is(err, mcpclient.ErrUnknownTool) {
				t.Fatalf("unapproved tool callable: %v", err)
			}
		})
	}
}

func TestInteropGoSDKProtocolVersions(t *testing.T) {
	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		clients := goSDKClients(t, func(c *mcpclient.ServerConfig) { c.ProtocolVersion = v })
		for transport, c := range clients {
			if got := c.Info().ProtocolVersion; got != v {
				t.Fatalf("%s: sent %s, negotiated %s", transport, v, got)
			}
			if r := call(t, c, "search_nodes", `{"query":"q"}`); !strings.Contains(r.Text, "Ada_Lovelace") {
				t.Fatalf("%s %s: %q", transport, v, r.Text)
			}
		}
	}
}

func TestInteropMCPGo(t *testing.T) {
	c := mcptest.Start(t, mcptest.GoServerConfig(t, "mcpgo", "mcpgo-server"))
	if info := c.Info(); info.Name != "odek-interop-mcpgo" {
		t.Fatalf("info %+v", info)
	}
	if r := call(t, c, "echo", `{"text":"hi"}`); r.Text != "hi" {
		t.Fatalf("echo %q", r.Text)
	}
	r := call(t, c, "weather", `{"city":"Oslo"}`)
	mustContain(t, r.Text, "Weather fetched", `"temperature_c":17.5`, `"conditions":"drizzle"`)
	r = call(t, c, "fail", `{"text":"nope"}`)
	if !r.IsError || !strings.HasPrefix(r.Text, mcpclient.ErrorFraming("mcpgo", "fail")) || !strings.Contains(r.Text, "nope") {
		t.Fatalf("fail %+v", r)
	}
	if r := call(t, c, "notify", `{}`); r.Text != "notified" {
		t.Fatalf("notify %q", r.Text)
	}
}
