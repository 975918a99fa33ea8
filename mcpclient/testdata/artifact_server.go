// Command artifact_server is the MCP fixture server of odek's contract
// tests: a stdio JSON-RPC 2.0 server implementing the odek-extension/v1
// fixture tools (echo, large_result, artifact_result, bad_artifact, slow,
// error_result) with knobs, plus misbehaviours for the bad-input tests:
// start-up modes (-mode) and, with -chaos, extra tools that break the
// protocol on demand. It uses only the standard library and is built by
// mcpclient/mcptest.
//
// Start-up modes (-mode): exit-initialize, hang-initialize, bad-protocol,
// invalid-tool-name, repeat-cursor, no-ping (answers ping with "method not
// found", as a minimal server does), garbage (junk lines before every
// answer), notify (notifications and a server→client request before every
// answer). -tools N adds N generated tools; -page-size M pages tools/list.
// -variant-file F changes echo's description while F exists (a restarted
// server then lists different tools). -starts F appends one line per start.
//
// Chaos tools (-chaos): huge_line {mib}, wrong_id {then_correct},
// double_response {error_first}, close_mid_line, crash {code},
// spawn_grandchild {pidfile, ignore_term}, stderr_flood {lines,
// long_line_bytes}, server_request, mixed_content, stats, env.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	mode        = flag.String("mode", "", "start-up misbehaviour")
	chaos       = flag.Bool("chaos", false, "expose the chaos tools")
	root        = flag.String("root", "", "artifact directory for artifact_result and bad_artifact (default: a fresh directory under $TMPDIR, never the working directory)")
	extraTools  = flag.Int("tools", 0, "number of generated extra tools")
	pageSize    = flag.Int("page-size", 0, "tools per tools/list page (0: one page)")
	protocol    = flag.String("protocol", "", "protocolVersion to answer (default: the client's)")
	variantFile = flag.String("variant-file", "", "when this file exists, echo's description changes")
	startsFile  = flag.String("starts", "", "append a line to this file at every start")
	httpAddr    = flag.String("http", "", "serve Streamable HTTP on this address instead of stdio (prints the URL on stdout)")
	httpJSON    = flag.Bool("http-json", false, "answer POSTs with application/json instead of an event stream")
	httpNoGet   = flag.Bool("http-no-get", false, "answer GET with 405 (no server-initiated stream)")
	httpAuth    = flag.String("http-auth", "", "require this Authorization header value (401 otherwise)")
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type server struct {
	wmu sync.Mutex
	w   *bufio.Writer

	mu          sync.Mutex
	cancels     map[string]chan struct{} // request id → cancelled
	waiting     map[string]chan []byte   // our request id → client answer
	cancelled   atomic.Int64
	slowRunning atomic.Int64 // "slow" calls being served now (stats)
	lastCancel  atomic.Value // string: requestId of the last notifications/cancelled
	initialized atomic.Bool
	// toolsMode changes the tool list (change_tools): "", "remove_echo",
	// "change_echo", "add", "invalid".
	toolsMode atomic.Value
	// clientCaps are the capabilities of the client's initialize.
	clientCaps atomic.Value
}

func main() {
	flag.Parse()
	switch *mode {
	case "sleeper", "sleeper-ignore-term":
		if *mode == "sleeper-ignore-term" {
			signal.Ignore(syscall.SIGTERM)
		}
		for {
			time.Sleep(time.Hour) // not select{}: that is a deadlock the runtime kills
		}
	}
	if *startsFile != "" {
		f, err := os.OpenFile(*startsFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	s := &server{w: bufio.NewWriterSize(os.Stdout, 64<<10), cancels: map[string]chan struct{}{}, waiting: map[string]chan []byte{}}
	s.lastCancel.Store("")
	s.toolsMode.Store("")
	s.clientCaps.Store("{}")
	if *httpAddr != "" {
		serveHTTP(s)
		return
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			s.handle(line)
		}
		if err != nil {
			os.Exit(0)
		}
	}
}

func (s *server) send(v any) {
	b, _ := json.Marshal(v)
	s.sendRaw(append(b, '\n'))
}

func (s *server) sendRaw(b []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.w.Write(b)
	if err := s.w.Flush(); err != nil {
		os.Exit(1)
	}
}

func (s *server) result(id json.RawMessage, result any) {
	s.before()
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *server) rpcError(id json.RawMessage, code int, msg string) {
	s.before()
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// before runs the garbage/notify modes ahead of every answer.
func (s *server) before() {
	switch *mode {
	case "garbage":
		s.sendRaw([]byte("this is not json\n{broken\n[1,2,3]\n\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n"))
	case "notify":
		s.sendRaw([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}` + "\n"))
		s.sendRaw([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}` + "\n"))
		s.sendRaw([]byte(`{"jsonrpc":"2.0","id":"srv-ping","method":"roots/list"}` + "\n"))
	}
}

func (s *server) handle(line []byte) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return
	}
	if req.Method == "" { // an answer to one of our requests
		s.mu.Lock()
		ch := s.waiting[string(req.ID)]
		s.mu.Unlock()
		if ch != nil {
			ch <- append([]byte(nil), line...)
		}
		return
	}
	switch req.Method {
	case "initialize":
		switch *mode {
		case "exit-initialize":
			fmt.Fprintln(os.Stderr, "fixture: exiting during initialize")
			os.Exit(2)
		case "hang-initialize":
			return
		}
		var p struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
		}
		json.Unmarshal(req.Params, &p)
		s.clientCaps.Store(string(p.Capabilities))
		v := p.ProtocolVersion
		if *protocol != "" {
			v = *protocol
		}
		if *mode == "bad-protocol" {
			v = "1999-01-01"
		}
		s.result(req.ID, map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "odek-fixture", "version": "1.0.0"},
			"instructions":    "fixture server",
		})
	case "notifications/initialized":
		s.initialized.Store(true)
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		json.Unmarshal(req.Params, &p)
		s.cancelled.Add(1)
		s.lastCancel.Store(string(p.RequestID))
		s.mu.Lock()
		if ch := s.cancels[string(p.RequestID)]; ch != nil {
			close(ch)
			delete(s.cancels, string(p.RequestID))
		}
		s.mu.Unlock()
	case "ping":
		if *mode == "no-ping" { // a minimal server: base MCP expects ping, the contract does not
			s.rpcError(req.ID, -32601, "Method not found")
			return
		}
		s.result(req.ID, map[string]any{})
	case "tools/list":
		s.listTools(req)
	case "tools/call":
		// Tools that wait run on their own goroutine (and can be
		// cancelled); the rest answer inline, in order, like a simple
		// server would.
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(req.Params, &p)
		if p.Name != "slow" && p.Name != "server_request" {
			s.call(req, nil)
			return
		}
		done := make(chan struct{})
		s.mu.Lock()
		s.cancels[string(req.ID)] = done
		s.mu.Unlock()
		go s.call(req, done)
	default:
		if len(req.ID) > 0 {
			s.rpcError(req.ID, -32601, "method not found: "+req.Method)
		}
	}
}

func schema(props string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
}

func (s *server) tools() []map[string]any {
	echoDesc := "Echo the text argument."
	if *variantFile != "" {
		if _, err := os.Stat(*variantFile); err == nil {
			echoDesc = "Echo, but changed."
		}
	}
	t := []map[string]any{
		{"name": "echo", "description": echoDesc, "inputSchema": schema(`"text":{"type":"string"}`)},
		{"name": "large_result", "description": "Return chars characters (repeating char), optionally inside an envelope with artifacts refs.", "inputSchema": schema(`"chars":{"type":"integer"},"char":{"type":"string"},"envelope":{"type":"boolean"},"artifacts":{"type":"integer"}`)},
		{"name": "artifact_result", "description": "Write artifacts under the root and return an odek.tool-result/v1 envelope.", "inputSchema": schema(`"size":{"type":"integer"},"count":{"type":"integer"},"summary":{"type":"string"},"omit_hash":{"type":"boolean"},"text":{"type":"string"}`)},
		{"name": "bad_artifact", "description": "Return an envelope with a bad artifact ref of the given kind.", "inputSchema": schema(`"kind":{"type":"string"}`)},
		{"name": "slow", "description": "Sleep ms milliseconds (until cancelled), then answer.", "inputSchema": schema(`"ms":{"type":"integer"}`)},
		{"name": "error_result", "description": "Return an isError result with text (or chars characters).", "inputSchema": schema(`"text":{"type":"string"},"chars":{"type":"integer"},"rpc":{"type":"boolean"}`)},
	}
	if *chaos {
		t = append(t, map[string]any{"name": "link_result", "description": "Return resource links: one under the root, two elsewhere.", "inputSchema": schema("")})
	}
	if *chaos {
		for _, n := range []string{"huge_line", "wrong_id", "double_response", "close_mid_line", "crash", "spawn_grandchild", "stderr_flood", "server_request", "mixed_content", "stats", "env", "progress", "change_tools", "client_caps", "http_info", "expire_session", "ping_later", "last_answer", "drop_get", "trace_seen"} {
			t = append(t, map[string]any{"name": n, "description": "chaos: " + n, "inputSchema": schema("")})
		}
	}
	switch s.toolsMode.Load().(string) {
	case "remove_echo":
		t = t[1:]
	case "change_echo":
		t[0]["description"] = "Echo, changed after approval."
	case "add":
		t = append(t, map[string]any{"name": "added.tool", "description": "added later", "inputSchema": schema("")})
	case "invalid":
		t = append(t, map[string]any{"name": "bad name", "description": "invalid", "inputSchema": schema("")})
	}
	if *mode == "dotted" {
		t = append(t, map[string]any{"name": "files.read", "description": "a dotted name (2025-11-25 guidance)", "inputSchema": schema(`"text":{"type":"string"}`)})
	}
	if *mode == "invalid-tool-name" {
		t = append(t, map[string]any{"name": "bad name", "description": "invalid", "inputSchema": schema("")})
	}
	for i := range *extraTools {
		t = append(t, map[string]any{"name": fmt.Sprintf("tool_%05d", i), "description": "generated", "inputSchema": schema("")})
	}
	return t
}

func (s *server) listTools(req request) {
	all := s.tools()
	var p struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(req.Params, &p)
	if *mode == "repeat-cursor" {
		s.result(req.ID, map[string]any{"tools": []any{}, "nextCursor": "same"})
		return
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p.Cursor, "page-"))
		if err != nil || n > len(all) {
			s.rpcError(req.ID, -32602, "bad cursor")
			return
		}
		start = n
	}
	end := len(all)
	if *pageSize > 0 && start+*pageSize < end {
		end = start + *pageSize
	}
	res := map[string]any{"tools": all[start:end]}
	if end < len(all) {
		res["nextCursor"] = fmt.Sprintf("page-%d", end)
	}
	s.result(req.ID, res)
}

type args struct {
	Text          string `json:"text"`
	Chars         int    `json:"chars"`
	Char          string `json:"char"`
	Envelope      bool   `json:"envelope"`
	Artifacts     int    `json:"artifacts"`
	Size          int    `json:"size"`
	Count         int    `json:"count"`
	Summary       string `json:"summary"`
	OmitHash      bool   `json:"omit_hash"`
	Kind          string `json:"kind"`
	MS            int    `json:"ms"`
	RPC           bool   `json:"rpc"`
	MiB           int    `json:"mib"`
	ThenCorrect   bool   `json:"then_correct"`
	ErrorFirst    bool   `json:"error_first"`
	Code          int    `json:"code"`
	PIDFile       string `json:"pidfile"`
	IgnoreTerm    bool   `json:"ignore_term"`
	Lines         int    `json:"lines"`
	LongLineBytes int    `json:"long_line_bytes"`
	// server_request: the method (default sampling/createMessage) and
	// params of the request sent to the client.
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// progress: how many notifications; change_tools: the new mode.
	Steps int    `json:"steps"`
	Mode  string `json:"mode"`
}

func text(t string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}}
}

func (s *server) call(req request, cancelled chan struct{}) {
	if cancelled != nil {
		defer func() {
			s.mu.Lock()
			delete(s.cancels, string(req.ID))
			s.mu.Unlock()
		}()
	}
	var p struct {
		Name      string `json:"name"`
		Arguments args   `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		s.rpcError(req.ID, -32602, "invalid params: "+err.Error())
		return
	}
	a := p.Arguments
	switch p.Name {
	case "echo":
		// Hand-encoded: the fast path the benchmarks measure.
		b := make([]byte, 0, 128+len(a.Text))
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, req.ID...)
		b = append(b, `,"result":{"content":[{"type":"text","text":`...)
		t, _ := json.Marshal(a.Text)
		b = append(b, t...)
		b = append(b, "}]}}\n"...)
		s.before()
		s.sendRaw(b)
	case "large_result":
		c := a.Char
		if c == "" {
			c = "x"
		}
		body := strings.Repeat(c, a.Chars)
		if !a.Envelope {
			s.result(req.ID, text(body))
			return
		}
		refs := s.writeArtifacts(a.Artifacts, 16, "large result part", false)
		s.result(req.ID, text(envelope(body, refs)))
	case "artifact_result":
		n := a.Count
		if n == 0 {
			n = 1
		}
		size := a.Size
		if size == 0 {
			size = 1024
		}
		t := a.Text
		if t == "" {
			t = fmt.Sprintf("Wrote %d artifacts.", n)
		}
		s.result(req.ID, text(envelope(t, s.writeArtifacts(n, size, a.Summary, a.OmitHash))))
	case "link_result":
		// A resource_link to a file under the artifact directory, one to
		// /etc/passwd and one to a web page.
		good := s.writeArtifacts(1, 64, "", true)[0]
		s.result(req.ID, map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "links:"},
			map[string]any{"type": "resource_link", "uri": good["uri"], "name": "notes.txt", "mimeType": "text/plain", "size": 64},
			map[string]any{"type": "resource_link", "uri": "file:///etc/passwd", "name": "passwd"},
			map[string]any{"type": "resource_link", "uri": "https://example.com/page", "name": "page"},
		}})
	case "bad_artifact":
		s.badArtifact(req.ID, a.Kind)
	case "slow":
		s.slowRunning.Add(1)
		defer s.slowRunning.Add(-1)
		select {
		case <-time.After(time.Duration(a.MS) * time.Millisecond):
			s.result(req.ID, text(fmt.Sprintf("slept %dms", a.MS)))
		case <-cancelled:
			// MCP: no answer to a cancelled request.
		}
	case "error_result":
		t := a.Text
		if a.Chars > 0 {
			t = strings.Repeat("e", a.Chars)
		}
		if a.RPC {
			s.rpcError(req.ID, -32000, t)
			return
		}
		r := text(t)
		r["isError"] = true
		s.result(req.ID, r)
	case "files.read":
		s.result(req.ID, text("dotted: "+a.Text))
	default:
		if *chaos && s.chaosCall(req, p.Name, a) {
			return
		}
		s.rpcError(req.ID, -32602, "unknown tool: "+p.Name)
	}
}

func envelope(t string, refs []map[string]any) string {
	b, _ := json.Marshal(map[string]any{"schema": "odek.tool-result/v1", "text": t, "artifacts": refs, "producer": "fixture"})
	return string(b)
}

var artifactSeq atomic.Int64

// artifactDir is -root, or without it a directory of its own under
// $TMPDIR, made on first use — never the directory the fixture runs in.
var artifactDir = sync.OnceValue(func() string {
	if *root != "" {
		return *root
	}
	dir, err := os.MkdirTemp("", "odek-fixture-artifacts-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
		return os.TempDir()
	}
	return dir
})

// writeArtifacts creates n files of size bytes under the root and returns
// correct refs for them.
func (s *server) writeArtifacts(n, size int, summary string, omitHash bool) []map[string]any {
	refs := []map[string]any{}
	for i := range n {
		seq := artifactSeq.Add(1)
		data := []byte(strings.Repeat(fmt.Sprintf("artifact %d line\n", seq), size/16+1))[:size]
		p := filepath.Join(artifactDir(), fmt.Sprintf("artifact-%d-%d.txt", os.Getpid(), seq))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fixture:", err)
		}
		sum := sha256.Sum256(data)
		ref := map[string]any{"schema": "odek.artifact-ref/v1", "id": fmt.Sprintf("art-%d", i+1), "uri": "file://" + p,
			"media_type": "text/plain", "size_bytes": size, "summary": summary, "future_field": 1}
		if !omitHash {
			ref["sha256"] = hex.EncodeToString(sum[:])
		}
		refs = append(refs, ref)
	}
	return refs
}

func (s *server) badArtifact(id json.RawMessage, kind string) {
	good := s.writeArtifacts(1, 64, "good", false)[0]
	path := strings.TrimPrefix(good["uri"].(string), "file://")
	ref := good
	switch kind {
	case "passwd":
		ref["uri"], ref["sha256"], ref["size_bytes"] = "file:///etc/passwd", nil, nil
	case "symlink":
		link := path + ".link"
		os.Symlink("/etc/passwd", link)
		ref["uri"], ref["sha256"], ref["size_bytes"] = "file://"+link, nil, nil
	case "dotdot":
		ref["uri"] = "file://" + filepath.Dir(path) + "/../" + filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path)
	case "missing":
		ref["uri"] = "file://" + path + ".missing"
	case "hash":
		ref["sha256"] = strings.Repeat("0", 64)
	case "size":
		ref["size_bytes"] = 65
	case "uppercase_hash":
		ref["sha256"] = strings.ToUpper(ref["sha256"].(string))
	case "http":
		ref["uri"] = "https://example.test/x"
	case "dir":
		ref["uri"], ref["sha256"], ref["size_bytes"] = "file://"+filepath.Dir(path), nil, nil
	case "duplicate_id":
		s.result(id, text(envelope("dup", []map[string]any{ref, ref})))
		return
	case "malformed_json":
		s.result(id, text(`{"schema":"odek.tool-result/v1","text":"cut`))
		return
	case "wrong_type":
		s.result(id, text(`{"schema":"odek.tool-result/v1","text":42}`))
		return
	case "two_envelopes":
		r := text(envelope("one", nil))
		r["content"] = append(r["content"].([]any), map[string]any{"type": "text", "text": envelope("two", nil)})
		s.result(id, r)
		return
	default:
		// "path:/abs/file": a ref naming any file (a confined server
		// naming another chat's file for the unconfined client to read).
		if p, ok := strings.CutPrefix(kind, "path:"); ok {
			ref["uri"], ref["sha256"], ref["size_bytes"] = "file://"+p, nil, nil
		}
	}
	s.result(id, text(envelope("bad artifact: "+kind, []map[string]any{ref})))
}

// chaosCall implements the chaos tools; it reports whether name was one.
func (s *server) chaosCall(req request, name string, a args) bool {
	switch name {
	case "huge_line":
		chunk := strings.Repeat("x", 1<<20)
		s.wmu.Lock()
		fmt.Fprintf(s.w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
		for range a.MiB {
			if _, err := s.w.WriteString(chunk); err != nil {
				os.Exit(1)
			}
		}
		s.w.WriteString("\"}]}}\n")
		err := s.w.Flush()
		s.wmu.Unlock()
		if err != nil {
			os.Exit(1)
		}
	case "wrong_id":
		var n int64
		json.Unmarshal(req.ID, &n)
		s.send(map[string]any{"jsonrpc": "2.0", "id": n + 100000, "result": text("misrouted")})
		s.send(map[string]any{"jsonrpc": "2.0", "result": text("no id")})
		s.send(map[string]any{"jsonrpc": "2.0", "id": "not-a-number", "result": text("string id")})
		if a.ThenCorrect {
			s.result(req.ID, text("correct"))
		}
	case "double_response":
		if a.ErrorFirst {
			s.rpcError(req.ID, -32000, "first: error")
			s.result(req.ID, text("second: result"))
		} else {
			s.result(req.ID, text("first: result"))
			s.rpcError(req.ID, -32000, "second: error")
		}
	case "close_mid_line":
		s.wmu.Lock()
		fmt.Fprintf(s.w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"half`, req.ID)
		s.w.Flush()
		os.Exit(0)
	case "crash":
		fmt.Fprintln(os.Stderr, "fixture: crashing on purpose")
		os.Exit(a.Code)
	case "spawn_grandchild":
		m := "sleeper"
		if a.IgnoreTerm {
			m = "sleeper-ignore-term"
		}
		cmd := exec.Command(os.Args[0], "-mode="+m)
		cmd.Stderr = os.Stderr // hold the stderr pipe open, as careless servers do
		if err := cmd.Start(); err != nil {
			s.rpcError(req.ID, -32000, err.Error())
			return true
		}
		os.WriteFile(a.PIDFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		if a.IgnoreTerm {
			signal.Ignore(syscall.SIGTERM)
		}
		s.result(req.ID, text(fmt.Sprintf("spawned %d", cmd.Process.Pid)))
	case "stderr_flood":
		w := bufio.NewWriterSize(os.Stderr, 64<<10)
		for i := range a.Lines {
			fmt.Fprintf(w, "fixture stderr line %d \x1b[31mred\x1b[0m\n", i)
		}
		if a.LongLineBytes > 0 {
			w.WriteString(strings.Repeat("L", a.LongLineBytes))
			w.WriteString("\n")
		}
		w.Flush()
		s.result(req.ID, text(fmt.Sprintf("wrote %d stderr lines", a.Lines)))
	case "server_request":
		method := a.Method
		if method == "" {
			method = "sampling/createMessage"
		}
		var params any = map[string]any{}
		if len(a.Params) > 0 {
			params = a.Params
		}
		ch := make(chan []byte, 1)
		s.mu.Lock()
		s.waiting[`"srv-1"`] = ch
		s.mu.Unlock()
		s.send(map[string]any{"jsonrpc": "2.0", "id": "srv-1", "method": method, "params": params})
		select {
		case ans := <-ch:
			s.result(req.ID, text(strings.TrimSpace(string(ans))))
		case <-time.After(10 * time.Second):
			s.result(req.ID, text("no answer"))
		}
	case "mixed_content":
		s.result(req.ID, map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "before"},
			map[string]any{"type": "image", "mimeType": "image/png", "data": strings.Repeat("QUJD", 1000)},
			map[string]any{"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///docs/readme.md", "mimeType": "text/markdown", "text": "embedded text"}},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///docs/doc.pdf", "mimeType": "application/pdf", "blob": "U0VDUkVU"}},
			map[string]any{"type": "resource_link", "uri": "file:///docs/big.bin", "name": "big.bin", "mimeType": "application/octet-stream", "size": 123456},
			map[string]any{"type": "text", "text": "after"},
		}})
	case "trace_seen":
		// The W3C trace context this call arrived with: params._meta and,
		// over HTTP, the POST's headers (issue 24).
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		json.Unmarshal(req.Params, &p)
		front.mu.Lock()
		hdr := front.lastTrace
		front.mu.Unlock()
		b, _ := json.Marshal(map[string]any{"meta_traceparent": p.Meta["traceparent"], "meta_tracestate": p.Meta["tracestate"],
			"header_traceparent": hdr, "meta_progress": p.Meta["progressToken"]})
		s.result(req.ID, text(string(b)))
	case "progress":
		var p struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		json.Unmarshal(req.Params, &p)
		// A notification for a token the client never sent first (it
		// must be dropped), then steps for the call's own token.
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": 999999, "progress": 1}})
		for i := 1; i <= a.Steps; i++ {
			if len(p.Meta.ProgressToken) == 0 {
				break
			}
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
				"progressToken": p.Meta.ProgressToken, "progress": i, "total": a.Steps, "message": fmt.Sprintf("step %d\x1b[31m", i)}})
		}
		s.result(req.ID, text(fmt.Sprintf("token=%s", p.Meta.ProgressToken)))
	case "change_tools":
		s.toolsMode.Store(a.Mode)
		s.result(req.ID, text("changed to "+a.Mode))
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
	case "client_caps":
		s.result(req.ID, text(s.clientCaps.Load().(string)))
	case "http_info":
		s.result(req.ID, text(httpInfo()))
	case "drop_get":
		front.mu.Lock()
		if front.dropGet != nil {
			close(front.dropGet)
			front.dropGet = nil
		}
		front.mu.Unlock()
		s.result(req.ID, text("dropped"))
	case "expire_session":
		s.result(req.ID, text("expiring"))
		expireSessions()
	case "ping_later":
		// After the answer, a ping on the GET stream (a server-initiated
		// message unrelated to any request).
		ch := make(chan []byte, 1)
		s.mu.Lock()
		s.waiting[`"srv-later"`] = ch
		s.mu.Unlock()
		s.result(req.ID, text("later"))
		go func() {
			s.send(map[string]any{"jsonrpc": "2.0", "id": "srv-later", "method": "ping"})
			select {
			case ans := <-ch:
				lastAnswer <- ans
			case <-time.After(20 * time.Second):
				lastAnswer <- []byte("no answer")
			}
		}()
	case "last_answer":
		select {
		case ans := <-lastAnswer:
			s.result(req.ID, text(strings.TrimSpace(string(ans))))
		case <-time.After(20 * time.Second):
			s.result(req.ID, text("no answer"))
		}
	case "env":
		b, _ := json.Marshal(os.Environ())
		s.result(req.ID, text(string(b)))
	case "stats":
		b, _ := json.Marshal(map[string]any{"cancelled": s.cancelled.Load(), "last_cancel": s.lastCancel.Load(), "initialized": s.initialized.Load(), "pid": os.Getpid(), "slow_running": s.slowRunning.Load()})
		s.result(req.ID, text(string(b)))
	default:
		return false
	}
	return true
}

// --- Streamable HTTP front end (-http) ------------------------------------
//
// The same server behind the MCP Streamable HTTP transport: every POST is
// handed to handle() like a stdin line; what the server writes is routed
// by a line router — a response to the POST that carries its id (as an
// event stream, or with -http-json as one JSON body), any other message
// to the oldest open POST stream, else to the GET stream (ping_later's
// request always to the GET stream). initialize gets a session id that
// every later request must carry (404 for an unknown one).

var lastAnswer = make(chan []byte, 1)

type httpFront struct {
	mu        sync.Mutex
	sessions  map[string]bool
	nextSess  int
	waiters   map[string]chan []byte // request id → its POST's stream
	order     []string               // open POST streams, oldest first
	get       chan []byte            // the GET stream, nil when none
	partial   []byte
	lastProto string
	lastSess  string
	lastTrace string // the traceparent header of the last POST
	authSeen  bool
	deletes   int
	eventID   int
	gets      int
	lastEvent string        // Last-Event-Id of the latest GET
	dropGet   chan struct{} // closed to end the current GET stream
}

var front = &httpFront{sessions: map[string]bool{}, waiters: map[string]chan []byte{}}

func httpInfo() string {
	front.mu.Lock()
	defer front.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"protocol_header": front.lastProto, "session": front.lastSess, "auth_seen": front.authSeen, "deletes": front.deletes,
		"gets": front.gets, "last_event_id": front.lastEvent})
	return string(b)
}

func expireSessions() {
	front.mu.Lock()
	clear(front.sessions)
	front.mu.Unlock()
}

// Write receives what the server writes (possibly parts of a line).
func (f *httpFront) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partial = append(f.partial, b...)
	for {
		i := strings.IndexByte(string(f.partial), '\n')
		if i < 0 {
			return len(b), nil
		}
		line := append([]byte(nil), f.partial[:i]...)
		f.partial = f.partial[i+1:]
		f.routeLocked(line)
	}
}

func (f *httpFront) routeLocked(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil {
		return // junk lines of the garbage mode are not HTTP's concern
	}
	if m.Method == "" && len(m.ID) > 0 {
		if ch := f.waiters[string(m.ID)]; ch != nil {
			ch <- line
			close(ch)
			delete(f.waiters, string(m.ID))
			for i, id := range f.order {
				if id == string(m.ID) {
					f.order = append(f.order[:i], f.order[i+1:]...)
					break
				}
			}
		}
		return
	}
	if string(m.ID) != `"srv-later"` && !*httpJSON && len(f.order) > 0 {
		f.waiters[f.order[0]] <- line
		return
	}
	if f.get != nil {
		select {
		case f.get <- line:
		default:
		}
	}
}

func serveHTTP(s *server) {
	s.w = bufio.NewWriterSize(front, 64<<10)
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		front.mu.Lock()
		front.lastProto = r.Header.Get("Mcp-Protocol-Version")
		if r.Method == http.MethodPost {
			front.lastTrace = r.Header.Get("Traceparent")
		}
		front.authSeen = r.Header.Get("Authorization") != ""
		front.mu.Unlock()
		if *httpAuth != "" && r.Header.Get("Authorization") != *httpAuth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sess := r.Header.Get("Mcp-Session-Id")
		switch r.Method {
		case http.MethodPost:
			frontPost(s, w, r, sess)
		case http.MethodGet:
			if *httpNoGet {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			if !validSession(w, sess) {
				return
			}
			frontGet(w, r)
		case http.MethodDelete:
			front.mu.Lock()
			delete(front.sessions, sess)
			front.deletes++
			front.mu.Unlock()
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
}

func validSession(w http.ResponseWriter, sess string) bool {
	front.mu.Lock()
	defer front.mu.Unlock()
	front.lastSess = sess
	switch {
	case sess == "":
		http.Error(w, "missing session", http.StatusBadRequest)
		return false
	case !front.sessions[sess]:
		http.Error(w, "unknown session", http.StatusNotFound)
		return false
	}
	return true
}

func frontPost(s *server, w http.ResponseWriter, r *http.Request, sess string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		front.mu.Lock()
		front.nextSess++
		sess = fmt.Sprintf("sess-%d", front.nextSess)
		front.sessions[sess] = true
		front.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sess)
	} else if !validSession(w, sess) {
		return
	}
	if len(m.ID) == 0 || m.Method == "" { // a notification or an answer
		w.WriteHeader(http.StatusAccepted)
		s.handle(append(body, '\n'))
		return
	}
	ch := make(chan []byte, 1024)
	front.mu.Lock()
	front.waiters[string(m.ID)] = ch
	front.order = append(front.order, string(m.ID))
	front.mu.Unlock()
	go s.handle(append(body, '\n'))
	if *httpJSON {
		for line := range ch {
			var probe struct {
				Method string `json:"method"`
			}
			json.Unmarshal(line, &probe)
			if probe.Method == "" {
				w.Header().Set("Content-Type", "application/json")
				w.Write(line)
				return
			}
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				return
			}
			writeEvent(w, line)
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func writeEvent(w io.Writer, line []byte) {
	front.mu.Lock()
	front.eventID++
	id := front.eventID
	front.mu.Unlock()
	fmt.Fprintf(w, "id: %d\nevent: message\ndata: %s\n\n", id, line)
}

func frontGet(w http.ResponseWriter, r *http.Request) {
	ch := make(chan []byte, 64)
	drop := make(chan struct{})
	front.mu.Lock()
	front.get = ch
	front.dropGet = drop
	front.gets++
	front.lastEvent = r.Header.Get("Last-Event-Id")
	front.mu.Unlock()
	defer func() {
		front.mu.Lock()
		if front.get == ch {
			front.get = nil
		}
		front.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for {
		select {
		case line := <-ch:
			writeEvent(w, line)
			fl.Flush()
		case <-drop:
			return
		case <-r.Context().Done():
			return
		}
	}
}
