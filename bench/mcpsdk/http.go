package main

// The Streamable HTTP comparison (-http): one MCP server built with the
// official go-sdk's Streamable HTTP handler runs in a child process of its
// own (this program with -serve-http), and odek's client, the go-sdk's
// StreamableClientTransport and mcp-go's streamable HTTP client call its
// echo tool over loopback, each with its own session and its library's
// default HTTP client settings.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"

	mark3client "github.com/mark3labs/mcp-go/client"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/odekrun/odek/mcpclient"
	"github.com/sirupsen/logrus"
)

// serveHTTP is the child: the go-sdk server with an echo tool behind the
// SDK's Streamable HTTP handler on a loopback port, printed on stdout.
func serveHTTP() {
	srv := gosdk.NewServer(&gosdk.Implementation{Name: "bench-http", Version: "1"}, nil)
	srv.AddTool(&gosdk.Tool{Name: "echo", Description: "Echo the text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
			}
			json.Unmarshal(req.Params.Arguments, &in)
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Text}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal("listen: %v", err)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return srv }, nil)
	fatal("serve: %v", http.Serve(ln, h))
}

// startHTTPServer runs serveHTTP in a child process and returns its URL
// and a function that stops it.
func startHTTPServer() (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, "-serve-http")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the HTTP server printed no URL: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line), stop, nil
}

func startOdekHTTP(ctx context.Context, url string) (*driver, error) {
	log := logrus.New()
	log.Out = io.Discard
	c, err := mcpclient.Start(ctx, mcpclient.ServerConfig{Name: "bench", URL: url, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("odek: %w", err)
	}
	return &driver{
		name: "odek",
		call: func(ctx context.Context, tool string, args json.RawMessage) error {
			r, err := c.Call(ctx, tool, args)
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error: %s", r.Text)
			}
			return err
		},
		close: func() { c.Close(context.Background()) },
	}, nil
}

func startGoSDKHTTP(ctx context.Context, url string) (*driver, error) {
	client := gosdk.NewClient(&gosdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		return nil, fmt.Errorf("go-sdk: %w", err)
	}
	return &driver{
		name: "go-sdk",
		call: func(ctx context.Context, tool string, args json.RawMessage) error {
			r, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tool, Arguments: args})
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		},
		close: func() { cs.Close() },
	}, nil
}

func startMark3HTTP(ctx context.Context, url string) (*driver, error) {
	c, err := mark3client.NewStreamableHttpClient(url)
	if err != nil {
		return nil, fmt.Errorf("mcp-go: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("mcp-go start: %w", err)
	}
	// mcp-go's LATEST_PROTOCOL_VERSION is a draft the go-sdk server
	// refuses; ask for the version odek sends.
	return mark3Driver(ctx, c, mcpclient.ProtocolVersion)
}
