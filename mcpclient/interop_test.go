package mcpclient_test

// Interop tests: mcpclient against two real MCP servers from npm,
// @modelcontextprotocol/server-everything and
// @modelcontextprotocol/server-filesystem, pinned in
// testdata/node/package.json and installed with
// `npm ci --prefix mcpclient/testdata/node` (.ci/run does it). They are
// launched by their installed entry point (node <bin script>) over stdio.
// Without node they skip unless ODEK_REQUIRE_NODE is set (CI sets it);
// with node but without the packages they fail saying how to install them.

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

const (
	everythingPkg = "@modelcontextprotocol/server-everything"
	filesystemPkg = "@modelcontextprotocol/server-filesystem"
)

// toolNames returns the names c listed.
func toolNames(c *mcpclient.Client) []string {
	var names []string
	for _, t := range c.Tools() {
		names = append(names, t.Name)
	}
	return names
}

func mustList(t *testing.T, c *mcpclient.Client, want ...string) {
	t.Helper()
	names := toolNames(c)
	for _, w := range want {
		found := false
		for _, n := range names {
			found = found || n == w
		}
		if !found {
			t.Fatalf("server %q does not list %q; it lists %v", c.Name(), w, names)
		}
	}
}

// contentLines returns the "[odek content]" lines of a rendered result.
func contentLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "[odek content] ") {
			out = append(out, l)
		}
	}
	return out
}

func TestInteropEverything(t *testing.T) {
	t.Parallel() // each runs its own node process; they overlap start-up
	cfg := mcptest.NodeServer(t, "everything", everythingPkg, "stdio")
	c := mcptest.Start(t, cfg)

	t.Run("handshake", func(t *testing.T) {
		info := c.Info()
		// We ask for 2025-03-26; the server supports it and answers it.
		if info.ProtocolVersion != mcpclient.ProtocolVersion {
			t.Fatalf("protocolVersion = %q, want %q", info.ProtocolVersion, mcpclient.ProtocolVersion)
		}
		if info.Name == "" || info.Instructions == "" {
			t.Fatalf("server info not read: %+v", info)
		}
		// No pages here (the server lists everything at once); paging is
		// covered against the fixture.
		mustList(t, c, "echo", "get-sum", "get-tiny-image", "get-resource-links",
			"get-resource-reference", "get-annotated-message", "get-structured-content",
			"trigger-long-running-operation")
		for _, tool := range c.Tools() {
			var schema map[string]any
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
				t.Fatalf("tool %q: input schema %s", tool.Name, tool.InputSchema)
			}
		}
		if err := c.Ping(bg); err != nil {
			t.Fatalf("ping: %v", err)
		}
	})

	t.Run("echo and get-sum", func(t *testing.T) {
		if r := call(t, c, "echo", `{"message":"hello from odek"}`); r.IsError || r.Text != "Echo: hello from odek" {
			t.Fatalf("echo = %+v", r)
		}
		if r := call(t, c, "get-sum", `{"a":2,"b":40}`); r.IsError || !strings.Contains(r.Text, "42") {
			t.Fatalf("get-sum = %+v", r)
		}
	})

	t.Run("invalid arguments are a tool error", func(t *testing.T) {
		r := call(t, c, "echo", `{"unexpected":1}`)
		if !r.IsError || r.Text == "" {
			t.Fatalf("echo without its argument = %+v, want a tool error", r)
		}
	})

	t.Run("image summarised", func(t *testing.T) {
		r := call(t, c, "get-tiny-image", `{}`)
		lines := contentLines(r.Text)
		if r.IsError || len(lines) != 1 {
			t.Fatalf("get-tiny-image = %q", r.Text)
		}
		mustContain(t, lines[0], `type="image"`, `media_type="image/png"`, "(content not shown)")
		if n := sizeBytes(t, lines[0]); n < 100 || n > 10000 {
			t.Fatalf("image size_bytes = %d", n)
		}
		mustContain(t, r.Text, "Here's the image you requested:", "The image above is the MCP logo.")
		if strings.Contains(r.Text, "iVBOR") || len(r.Text) > 400 {
			t.Fatalf("image data leaked into the text: %q", clipTest(r.Text))
		}
	})

	t.Run("resource links summarised", func(t *testing.T) {
		r := call(t, c, "get-resource-links", `{"count":2}`)
		lines := contentLines(r.Text)
		if r.IsError || len(lines) != 2 {
			t.Fatalf("get-resource-links = %q", r.Text)
		}
		mustContain(t, lines[0], `type="resource_link"`, `name="Blob Resource 1"`, "media_type=")
		mustContain(t, lines[1], `type="resource_link"`, `name="Text Resource 2"`, `media_type="text/plain"`)
	})

	t.Run("embedded resources: text inlined, blob summarised", func(t *testing.T) {
		for _, kind := range []string{"Text", "Blob"} {
			r := call(t, c, "get-resource-reference", `{"resourceType":"`+kind+`","resourceId":3}`)
			lines := contentLines(r.Text)
			if r.IsError || len(lines) != 1 {
				t.Fatalf("get-resource-reference %s = %q", kind, r.Text)
			}
			mustContain(t, lines[0], `type="resource"`, `name="3"`, "size_bytes=")
			if n := sizeBytes(t, lines[0]); n <= 0 {
				t.Fatalf("resource size_bytes = %d", n)
			}
			// A short text resource is shown (inside the untrusted
			// boundary the agent adds); a blob never is.
			if kind == "Text" {
				mustContain(t, lines[0], "(text follows)")
				mustContain(t, r.Text, "Resource 3: ")
			} else {
				mustContain(t, lines[0], "(content not shown)")
			}
		}
	})

	t.Run("annotated message with image", func(t *testing.T) {
		r := call(t, c, "get-annotated-message", `{"messageType":"success","includeImage":true}`)
		if r.IsError || len(contentLines(r.Text)) != 1 || strings.Contains(r.Text, "iVBOR") {
			t.Fatalf("get-annotated-message = %q", clipTest(r.Text))
		}
	})

	t.Run("structured content", func(t *testing.T) {
		r := call(t, c, "get-structured-content", `{"location":"New York"}`)
		if r.IsError || !strings.Contains(r.Text, "temperature") {
			t.Fatalf("get-structured-content = %+v", r)
		}
	})
}

// TestInteropEverythingLongRunningTimeout cancels the server's long-running
// operation by the per-call timeout: a *TimeoutError naming server, tool
// and limit, and the same server process answers the next call at once.
func TestInteropEverythingLongRunningTimeout(t *testing.T) {
	t.Parallel() // each runs its own node process; they overlap start-up
	cfg := mcptest.NodeServer(t, "everything", everythingPkg, "stdio")
	cfg.Timeout = time.Second
	// The operation keeps a timer running in node after the timeout, which
	// keeps the process alive after stdin closes; do not wait for it.
	cfg.CloseGrace = 100 * time.Millisecond
	c := mcptest.Start(t, cfg)
	start := time.Now()
	_, err := c.Call(bg, "trigger-long-running-operation", json.RawMessage(`{"duration":10,"steps":1}`))
	var te *mcpclient.TimeoutError
	if !errors.As(err, &te) || te.Server != "everything" || te.Tool != "trigger-long-running-operation" || te.Limit != cfg.Timeout {
		t.Fatalf("err = %v, want a *TimeoutError", err)
	}
	if el := time.Since(start); el >= 10*time.Second {
		t.Fatalf("the call waited for the operation (%s) instead of the 1s timeout", el)
	}
	// The operation may still be running in the server; the server stays
	// up and answers (well within the timeout).
	if r := call(t, c, "echo", `{"message":"still here"}`); r.Text != "Echo: still here" {
		t.Fatalf("echo after the timeout = %+v", r)
	}
	if c.Restarts() != 0 {
		t.Fatalf("server restarted %d times", c.Restarts())
	}
}

func TestInteropFilesystem(t *testing.T) {
	t.Parallel() // each runs its own node process; they overlap start-up
	dir := t.TempDir()
	mustWrite := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("notes.txt", []byte("first line\nsecond line\n"))
	mustWrite("sub/inner.txt", []byte("inner"))
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	mustWrite("pixel.png", png)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("not for you"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server compares real paths; resolve the temp dir's symlinks (if
	// any) the same way.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}

	c := mcptest.Start(t, mcptest.NodeServer(t, "fs", filesystemPkg, real))
	mustList(t, c, "read_text_file", "read_media_file", "list_directory", "list_allowed_directories")
	if err := mcpclient.CheckProtocolVersion("fs", c.Info().ProtocolVersion); err != nil {
		t.Fatal(err)
	}
	arg := func(k, v string) string {
		b, _ := json.Marshal(map[string]string{k: v})
		return string(b)
	}

	r := call(t, c, "list_directory", arg("path", real))
	if r.IsError {
		t.Fatalf("list_directory = %+v", r)
	}
	mustContain(t, r.Text, "[FILE] notes.txt", "[FILE] pixel.png", "[DIR] sub")

	if r := call(t, c, "read_text_file", arg("path", filepath.Join(real, "notes.txt"))); r.IsError || r.Text != "first line\nsecond line\n" {
		t.Fatalf("read_text_file = %+v", r)
	}
	if r := call(t, c, "read_text_file", arg("path", filepath.Join(real, "sub", "inner.txt"))); r.IsError || r.Text != "inner" {
		t.Fatalf("read_text_file sub/inner.txt = %+v", r)
	}

	r = call(t, c, "read_media_file", arg("path", filepath.Join(real, "pixel.png")))
	lines := contentLines(r.Text)
	if r.IsError || len(lines) != 1 {
		t.Fatalf("read_media_file = %q", r.Text)
	}
	mustContain(t, lines[0], `type="image"`, `media_type="image/png"`, "(content not shown)")
	if n := sizeBytes(t, lines[0]); n != int64(len(png)) {
		t.Fatalf("size_bytes = %d, the file has %d bytes", n, len(png))
	}

	// Outside the allowed directory the server refuses: a tool error, and
	// the content never shows.
	r = call(t, c, "read_text_file", arg("path", outside))
	if !r.IsError || strings.Contains(r.Text, "not for you") {
		t.Fatalf("read outside the allowed dir = %+v", r)
	}
	mustContain(t, r.Text, "Access denied")
}

// sizeBytes reads size_bytes=N from a content line.
func sizeBytes(t *testing.T, line string) int64 {
	t.Helper()
	m := regexp.MustCompile(`size_bytes=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no size_bytes in %q", line)
	}
	var n int64
	fmt.Sscan(m[1], &n)
	return n
}

// TestInteropProtocolVersionAnswers records what each server answers to a
// protocol version it does not know (its own latest) and checks that our
// client would accept that answer too: a server that negotiates a
// different version than the 2025-03-26 we ask for is still compatible.
func TestInteropProtocolVersionAnswers(t *testing.T) {
	t.Parallel() // each runs its own node process; they overlap start-up
	for _, tc := range []struct{ name, pkg, arg string }{
		{"everything", everythingPkg, "stdio"},
		{"fs", filesystemPkg, t.TempDir()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := mcptest.NodeServer(t, tc.name, tc.pkg, tc.arg)
			v := rawInitialize(t, cfg, "2099-01-01")
			t.Logf("%s answers protocolVersion %q to an unknown version", tc.pkg, v)
			if v == "2099-01-01" {
				t.Fatal("server echoed a version it cannot know")
			}
			if err := mcpclient.CheckProtocolVersion(tc.name, v); err != nil {
				t.Fatalf("the server's latest version would be refused: %v", err)
			}
		})
	}
}

// rawInitialize runs cfg's command, sends one initialize asking for
// version and returns the protocolVersion of the answer.
func rawInitialize(t *testing.T, cfg mcpclient.ServerConfig, version string) string {
	t.Helper()
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = cfg.Env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"odek-test","version":"0"}}}` + "\n"
	if _, err := stdin.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && string(m.ID) == "1" {
				answer <- m.Result.ProtocolVersion
				return
			}
		}
		close(answer)
	}()
	select {
	case v, ok := <-answer:
		if !ok {
			t.Fatal("the server closed stdout without answering initialize")
		}
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("no initialize answer within 30s")
		return ""
	}
}

// The reference filesystem server honours roots: with odek's roots it
// works in the root odek gives (the job's directory), not in the
// directory of its arguments.
func TestInteropFilesystemRoots(t *testing.T) {
	argDir, rootDir := t.TempDir(), t.TempDir()
	for _, d := range []string{argDir, rootDir} {
		if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte("in "+filepath.Base(d)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	realArg, _ := filepath.EvalSymlinks(argDir)
	realRoot, _ := filepath.EvalSymlinks(rootDir)
	cfg := mcptest.NodeServer(t, "fs", filesystemPkg, realArg)
	cfg.Roots = func() []string { return []string{realRoot} }
	c := mcptest.Start(t, cfg)
	arg := func(p string) string {
		b, _ := json.Marshal(map[string]string{"path": p})
		return string(b)
	}
	// The server asks roots/list after initialized; poll until it applied
	// the answer.
	var r *mcpclient.ToolResult
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		r = call(t, c, "list_allowed_directories", `{}`)
		if strings.Contains(r.Text, realRoot) {
			break
		}
	}
	if !strings.Contains(r.Text, realRoot) || strings.Contains(r.Text, realArg) {
		t.Fatalf("allowed directories with roots: %q", r.Text)
	}
	if r := call(t, c, "read_text_file", arg(filepath.Join(realRoot, "f.txt"))); r.IsError || r.Text != "in "+filepath.Base(rootDir) {
		t.Fatalf("read in the root: %+v", r)
	}
	if r := call(t, c, "read_text_file", arg(filepath.Join(realArg, "f.txt"))); !r.IsError {
		t.Fatalf("read outside the root allowed: %+v", r)
	}
}
