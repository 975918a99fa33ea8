// Command mcpgo-server is an MCP server written with
// github.com/mark3labs/mcp-go for odek's interop tests, over stdio.
//
// Tools: echo {text}; weather {city} — a short text and the data only in
// structuredContent; fail {text} — an isError result; notify {} — sends a
// notifications/message to the client before answering.
package main

import (
	"context"
	"log"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	log.SetOutput(os.Stderr)
	s := server.NewMCPServer("odek-interop-mcpgo", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo the text."), mcp.WithString("text", mcp.Required(), mcp.Description("the text"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("weather", mcp.WithDescription("Weather of a city."), mcp.WithString("city", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			data := map[string]any{"city": req.GetString("city", ""), "temperature_c": 17.5, "conditions": "drizzle"}
			return mcp.NewToolResultStructured(data, "Weather fetched"), nil
		})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Fail with the text."), mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(req.GetString("text", "failed")), nil
		})
	s.AddTool(mcp.NewTool("notify", mcp.WithDescription("Send a log notification, then answer.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "hello"})
			return mcp.NewToolResultText("notified"), nil
		})
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}
