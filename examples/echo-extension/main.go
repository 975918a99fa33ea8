// Command echo-extension is a small, complete odek extension server: an
// MCP server over stdio that follows the odek-extension/v1 contract
// (docs/EXTENSIONS.md). It uses only the standard library, so it doubles
// as a template.
//
// Tools:
//
//   - echo {text}: returns the text as a plain text result.
//   - report {text, lines}: writes a report file of `lines` lines into the
//     artifact directory (-dir) and returns an odek.tool-result/v1 envelope:
//     a one-line summary plus an odek.artifact-ref/v1 reference with the
//     file's size and SHA-256. odek shows the model the summary and one
//     metadata line; the file itself never enters the model's context.
//
// Run it by hand through odek's checker:
//
//	go build -o /tmp/echo-extension ./examples/echo-extension
//	mkdir -p /tmp/echo-artifacts
//	odek ext check --root /tmp/echo-artifacts \
//	    --call echo='{"text":"hi"}' --call report='{"lines":3}' \
//	    -- /tmp/echo-extension -dir /tmp/echo-artifacts
//
// The protocol in brief: one JSON-RPC 2.0 message per line on stdin and
// stdout; logs go to stderr only. Requests carry an id and get exactly one
// response with that id; notifications carry none and get no answer.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// maxLine bounds one incoming message. A server, like odek, should never
// buffer an unbounded line.
const maxLine = 4 << 20

var artifactDir = flag.String("dir", "", "directory for report artifacts (must be one of odek's artifact_roots)")

// message is any incoming JSON-RPC message. Unknown fields are ignored,
// as the contract's additive rule asks.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// tool is one entry of tools/list. Names are 1–64 characters of
// [A-Za-z0-9_-] and never contain "__".
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

var tools = []tool{
	{
		Name:        "echo",
		Description: "Return the given text unchanged.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"text to return"}},"required":["text"]}`),
	},
	{
		Name:        "report",
		Description: "Write a report file of the given number of lines and return a short summary with the file attached as an artifact.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"line content"},"lines":{"type":"integer","minimum":1,"maximum":100000}}}`),
	},
}

func main() {
	flag.Parse()
	log.SetOutput(os.Stderr) // stdout belongs to the protocol
	log.SetPrefix("echo-extension: ")

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), maxLine)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			log.Printf("ignoring a line that is not JSON: %v", err)
			continue
		}
		if len(m.ID) == 0 || string(m.ID) == "null" {
			continue // a notification (initialized, cancelled, …): no answer
		}
		resp := response{JSONRPC: "2.0", ID: m.ID}
		resp.Result, resp.Error = handle(m)
		b, err := json.Marshal(resp) // json.Marshal never emits a raw newline
		if err != nil {
			log.Printf("encoding a response: %v", err)
			continue
		}
		out.Write(append(b, '\n'))
		if err := out.Flush(); err != nil {
			log.Fatalf("stdout closed: %v", err)
		}
	}
	if err := in.Err(); err != nil {
		log.Fatalf("reading stdin: %v", err)
	}
	// stdin closed: odek is done with us. Exit promptly.
}

func handle(m message) (any, *rpcError) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &p)
		return map[string]any{
			// Answer with the version odek asked for when we support it.
			"protocolVersion": "2025-03-26",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "echo-extension", "version": "1.0.0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		return call(m.Params)
	}
	return nil, &rpcError{Code: -32601, Message: "method not found: " + m.Method}
}

// args holds every argument any tool takes; unknown ones are ignored.
type args struct {
	Text  string `json:"text"`
	Lines int    `json:"lines"`
}

func call(raw json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      string `json:"name"`
		Arguments args   `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}
	}
	switch p.Name {
	case "echo":
		return textResult(p.Arguments.Text, false), nil
	case "report":
		return report(p.Arguments), nil
	}
	return nil, &rpcError{Code: -32602, Message: "unknown tool: " + p.Name}
}

func textResult(text string, isError bool) map[string]any {
	r := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if isError {
		r["isError"] = true
	}
	return r
}

var seq atomic.Int64

// report writes the artifact and returns an envelope referencing it.
// Failures the model should see are isError results, not protocol errors.
func report(a args) map[string]any {
	if *artifactDir == "" {
		return textResult("report: this server was started without -dir, so it cannot write artifacts", true)
	}
	n := a.Lines
	if n <= 0 {
		n = 10
	}
	if n > 100000 {
		return textResult(fmt.Sprintf("report: lines=%d exceeds the maximum of 100000", n), true)
	}
	line := a.Text
	if line == "" {
		line = "all good"
	}
	body := []byte(strings.Repeat(strings.ReplaceAll(line, "\n", " ")+"\n", n))
	dir, err := filepath.Abs(*artifactDir)
	if err != nil {
		return textResult("report: "+err.Error(), true)
	}
	path := filepath.Join(dir, fmt.Sprintf("report-%d-%d.txt", time.Now().UnixNano(), seq.Add(1)))
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return textResult("report: "+err.Error(), true)
	}
	sum := sha256.Sum256(body)
	envelope := map[string]any{
		"schema": "odek.tool-result/v1",
		"text":   fmt.Sprintf("Wrote a report of %d lines (%d bytes); it is attached as artifact report-1.", n, len(body)),
		"artifacts": []any{map[string]any{
			"schema":     "odek.artifact-ref/v1",
			"id":         "report-1",
			"uri":        "file://" + filepath.ToSlash(path),
			"media_type": "text/plain",
			"sha256":     hex.EncodeToString(sum[:]),
			"size_bytes": len(body),
			"summary":    "The full report, one line per entry",
		}},
	}
	b, _ := json.Marshal(envelope)
	// The envelope travels as the JSON text of a single text content item.
	return textResult(string(b), false)
}
