package mcpauth_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcpauth"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// An authorization server no one here wrote: the MCP TypeScript SDK's
// example server with its demo OAuth provider (--oauth-strict: tokens must
// carry this server's resource; the SDK's token endpoint checks PKCE).
// odek logs in (discovery, registration, PKCE, resource) and calls a tool
// with the token. The demo issues no refresh tokens; refresh is tested
// against authtest.
func TestInteropTypeScriptSDKOAuth(t *testing.T) {
	node, script := mcptest.NodeScript(t, "@modelcontextprotocol/sdk", "dist/esm/examples/server/simpleStreamableHttp.js")
	mcpPort, authPort := freePort(t), freePort(t)
	cmd := exec.Command(node, script, "--oauth", "--oauth-strict")
	cmd.Env = append(os.Environ(), "MCP_PORT="+strconv.Itoa(mcpPort), "MCP_AUTH_PORT="+strconv.Itoa(authPort))
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		closed := false
		for sc.Scan() {
			t.Log("sdk:", sc.Text())
			if !closed && strings.Contains(sc.Text(), "listening on port "+strconv.Itoa(mcpPort)) {
				close(ready)
				closed = true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the SDK server did not start")
	}
	mcpURL := "http://localhost:" + strconv.Itoa(mcpPort) + "/mcp"
	store := mcpauth.NewStore(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	browserErr := make(chan error, 1)
	rec, err := mcpauth.Login(ctx, store, mcpauth.LoginOptions{
		Server: "sdk", URL: mcpURL,
		OnURL: func(u string) {
			go func() {
				// The demo provider approves at once and redirects.
				resp, err := http.Get(u)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = errors.New("callback answered " + resp.Status)
					}
				}
				browserErr <- err
			}()
		},
	})
	if err != nil {
		t.Fatalf("login against the SDK's authorization server: %v", err)
	}
	if err := <-browserErr; err != nil {
		t.Fatal(err)
	}
	if rec.Issuer == "" || rec.AccessToken == "" {
		t.Fatalf("incomplete record: issuer %q", rec.Issuer)
	}
	src, _ := mcpauth.NewSource(store, "sdk", mcpURL, nil)
	c, err := mcpclient.Start(ctx, mcpclient.ServerConfig{Name: "sdk", URL: mcpURL, Auth: src, MaxRestarts: -1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("start with the token: %v", err)
	}
	defer c.Close(ctx)
	r, err := c.Call(ctx, "greet", []byte(`{"name":"odek"}`))
	if err != nil || !strings.Contains(r.Text, "odek") {
		t.Fatalf("greet: %+v %v", r, err)
	}
	// Without the token the SDK answers 401 and odek names the command.
	_, err = mcpclient.Start(ctx, mcpclient.ServerConfig{Name: "sdk", URL: mcpURL, MaxRestarts: -1})
	if !errors.Is(err, mcpclient.ErrAuthRequired) || !strings.Contains(err.Error(), "odek mcp login sdk") {
		t.Fatalf("start without a token: %v", err)
	}
}
