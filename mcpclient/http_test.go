package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func httpInfo(t *testing.T, c *mcpclient.Client) (info struct {
	Protocol string `json:"protocol_header"`
	Session  string `json:"session"`
	Auth     bool   `json:"auth_seen"`
	Deletes  int    `json:"deletes"`
}) {
	t.Helper()
	if err := json.Unmarshal([]byte(call(t, c, "http_info", `{}`).Text), &info); err != nil {
		t.Fatal(err)
	}
	return info
}

func TestHTTPCallsOverEventStreamsAndJSON(t *testing.T) {
	for _, mode := range []string{"sse", "json"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-chaos"}
			if mode == "json" {
				args = append(args, "-http-json")
			}
			cfg := mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, args...))
			cfg.ProtocolVersion = "2025-06-18"
			c := mcptest.Start(t, cfg)
			if got := c.Info().ProtocolVersion; got != "2025-06-18" {
				t.Fatalf("negotiated %s", got)
			}
			for i := range 20 {
				if r := call(t, c, "echo", `{"text":"m`+string(rune('a'+i))+`"}`); r.Text != "m"+string(rune('a'+i)) {
					t.Fatalf("echo = %q", r.Text)
				}
			}
			info := httpInfo(t, c)
			if info.Session != "sess-1" || info.Protocol != "2025-06-18" {
				t.Fatalf("session %q, MCP-Protocol-Version %q", info.Session, info.Protocol)
			}
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r, err := c.Call(context.Background(), "echo", json.RawMessage(`{"text":"p"}`)); err != nil || r.Text != "p" {
						t.Errorf("concurrent echo: %+v %v", r, err)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// Messages on the POST's stream before its answer: the server's ping is
// answered (the answer goes back as its own POST) and progress reaches
// the call.
func TestHTTPServerMessagesOnTheCallStream(t *testing.T) {
	c := mcptest.Start(t, mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-chaos")))
	if ans := serverAnswer(t, c, "ping"); ans.Error != nil || string(ans.Result) != "{}" {
		t.Fatalf("ping over HTTP answered %+v", ans)
	}
	var n int
	var mu sync.Mutex
	ctx := mcpclient.WithProgress(context.Background(), func(mcpclient.Progress) { mu.Lock(); n++; mu.Unlock() })
	if _, err := c.Call(ctx, "progress", json.RawMessage(`{"steps":4}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 4 {
		t.Fatalf("%d progress notifications, want 4", n)
	}
}

// A server-initiated request on the GET stream is answered.
func TestHTTPGetStreamServerRequests(t *testing.T) {
	c := mcptest.Start(t, mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-chaos")))
	waitGetStreams(t, c, 1)
	call(t, c, "ping_later", `{}`)
	got := call(t, c, "last_answer", `{}`).Text
	if !strings.Contains(got, `"id":"srv-later"`) || !strings.Contains(got, `"result":{}`) {
		t.Fatalf("the GET stream's ping was answered %s", got)
	}
}

// A dropped GET stream is reopened (after a backoff) with Last-Event-ID,
// and server-initiated requests reach odek again.
func TestHTTPGetStreamReconnects(t *testing.T) {
	c := mcptest.Start(t, mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-chaos")))
	waitGetStreams(t, c, 1)
	call(t, c, "ping_later", `{}`) // an event with an id on the first stream
	if got := call(t, c, "last_answer", `{}`).Text; !strings.Contains(got, `"result":{}`) {
		t.Fatalf("first stream: %s", got)
	}
	call(t, c, "drop_get", `{}`)
	var info struct {
		Gets      int    `json:"gets"`
		LastEvent string `json:"last_event_id"`
	}
	for deadline := time.Now().Add(15 * time.Second); info.Gets < 2 && time.Now().Before(deadline); {
		json.Unmarshal([]byte(call(t, c, "http_info", `{}`).Text), &info)
	}
	if info.Gets != 2 || info.LastEvent == "" {
		t.Fatalf("GET stream not reopened with Last-Event-ID: %+v", info)
	}
	call(t, c, "ping_later", `{}`)
	if got := call(t, c, "last_answer", `{}`).Text; !strings.Contains(got, `"result":{}`) {
		t.Fatalf("after reconnecting: %s", got)
	}
}

// A session the server forgot (404) closes the connection; the next call
// starts a new session (the restart policy).
func TestHTTPSessionExpiryReconnects(t *testing.T) {
	var mu sync.Mutex
	var reports []mcpclient.RestartReport
	cfg := mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-chaos", "-http-no-get"))
	cfg.OnRestart = func(r mcpclient.RestartReport) { mu.Lock(); reports = append(reports, r); mu.Unlock() }
	c := mcptest.Start(t, cfg)
	call(t, c, "expire_session", `{}`)
	err := callErr(t, c, "echo", `{"text":"x"}`)
	if !errors.Is(err, mcpclient.ErrSessionExpired) {
		t.Fatalf("call on an expired session: %v", err)
	}
	if r := call(t, c, "echo", `{"text":"again"}`); r.Text != "again" {
		t.Fatalf("after reconnecting: %q", r.Text)
	}
	if s := httpInfo(t, c).Session; s != "sess-2" {
		t.Fatalf("session after reconnecting %q", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 1 || reports[0].Err != nil || !errors.Is(reports[0].Cause, mcpclient.ErrSessionExpired) {
		t.Fatalf("restart reports %+v", reports)
	}
}

func TestHTTPLimitsAsForStdio(t *testing.T) {
	t.Run("max_response_bytes", func(t *testing.T) {
		cfg := mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-chaos"))
		cfg.MaxResponseBytes = 1 << 20
		c := mcptest.Start(t, cfg)
		err := callErr(t, c, "huge_line", `{"mib":3}`)
		var lt *mcpclient.LineTooLongError
		if !errors.As(err, &lt) || lt.Limit != 1<<20 || lt.Server != "web" {
			t.Fatalf("oversized message: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		cfg := mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-chaos"))
		cfg.Timeout = 300 * time.Millisecond
		c := mcptest.Start(t, cfg)
		err := callErr(t, c, "slow", `{"ms":5000}`)
		var te *mcpclient.TimeoutError
		if !errors.As(err, &te) || te.Tool != "slow" {
			t.Fatalf("slow call: %v", err)
		}
		if r := call(t, c, "echo", `{"text":"alive"}`); r.Text != "alive" {
			t.Fatalf("after a timeout: %q", r.Text)
		}
	})
	t.Run("file refs of a remote server are always rejected", func(t *testing.T) {
		root := t.TempDir()
		cfg := mcptest.HTTPConfig(t, "web", mcptest.HTTPFixture(t, "-root="+root))
		cfg.ArtifactRoots = []string{root} // even with a root that holds the file
		c := mcptest.Start(t, cfg)
		err := callErr(t, c, "artifact_result", `{"size":10}`)
		if !errors.Is(err, artifacts.ErrOutsideRoots) || !strings.Contains(err.Error(), "remote (url) server") {
			t.Fatalf("remote file ref: %v", err)
		}
	})
}

// Headers go with every request and never into logs or errors.
func TestHTTPHeadersSentNeverLogged(t *testing.T) {
	const secret = "Bearer s3cr3t-token-value"
	url := mcptest.HTTPFixture(t, "-chaos", "-http-auth="+secret)
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	cfg := mcptest.HTTPConfig(t, "web", url)
	cfg.Logger = log
	cfg.Headers = map[string]string{"Authorization": secret}
	c := mcptest.Start(t, cfg)
	if !httpInfo(t, c).Auth {
		t.Fatal("Authorization not sent")
	}
	call(t, c, "echo", `{"text":"x"}`)
	// Without the header the server refuses, and the error does not quote it.
	cfg.Headers = map[string]string{"Authorization": "Bearer wrong-value"}
	_, err := mcpclient.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "wrong-value") {
		t.Fatalf("unauthorized start: %v", err)
	}
	for _, e := range hook.AllEntries() {
		line, _ := e.String()
		if strings.Contains(line, "s3cr3t") || strings.Contains(line, "wrong-value") {
			t.Fatalf("a header value was logged: %s", line)
		}
	}
}

func TestHTTPTransportRules(t *testing.T) {
	t.Run("TLS is verified", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Error("a request reached a server whose certificate is not trusted")
		}))
		defer srv.Close()
		se := startErr(t, mcptest.HTTPConfig(t, "web", srv.URL+"/mcp"))
		if !strings.Contains(se.Error(), "certificate") {
			t.Fatalf("untrusted certificate: %v", se)
		}
	})
	t.Run("http only to loopback", func(t *testing.T) {
		for _, u := range []string{"http://example.com/mcp", "http://10.1.2.3:8080/mcp", "ftp://localhost/x", "https://user:pw@h/mcp"} {
			se := startErr(t, mcptest.HTTPConfig(t, "web", u))
			if se.Phase != "config" || !errors.Is(se, mcpclient.ErrInvalidConfig) || strings.Contains(se.Error(), "pw@") {
				t.Fatalf("%s: %v", u, se)
			}
		}
		cfg := mcptest.HTTPConfig(t, "web", "http://10.1.2.3:9/mcp")
		cfg.AllowInsecureHTTP = true
		if _, err := cfg.Limits(); err != nil {
			t.Fatalf("allowed insecure http refused: %v", err)
		}
	})
	t.Run("redirects are not followed", func(t *testing.T) {
		target := mcptest.HTTPFixture(t)
		srv := httptest.NewServer(http.RedirectHandler(target, http.StatusTemporaryRedirect))
		defer srv.Close()
		cfg := mcptest.HTTPConfig(t, "web", srv.URL+"/mcp")
		cfg.Headers = map[string]string{"Authorization": "Bearer x"}
		se := startErr(t, cfg)
		if !strings.Contains(se.Error(), "redirects are not followed") {
			t.Fatalf("redirect: %v", se)
		}
	})
	t.Run("reserved headers refused", func(t *testing.T) {
		cfg := mcptest.HTTPConfig(t, "web", "http://127.0.0.1:1/mcp")
		cfg.Headers = map[string]string{"Mcp-Session-Id": "x"}
		if se := startErr(t, cfg); se.Phase != "config" {
			t.Fatalf("reserved header: %v", se)
		}
	})
	t.Run("DELETE ends the session on close", func(t *testing.T) {
		url := mcptest.HTTPFixture(t, "-chaos")
		c, err := mcpclient.Start(context.Background(), mcptest.HTTPConfig(t, "web", url))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		c2 := mcptest.Start(t, mcptest.HTTPConfig(t, "web2", url))
		if d := httpInfo(t, c2).Deletes; d != 1 {
			t.Fatalf("%d DELETEs after close, want 1", d)
		}
	})
}

// waitGetStreams waits until the client has opened n GET streams: the
// client opens its GET stream after initialize, on its own schedule, and a
// server-initiated message sent before that has nowhere to go.
func waitGetStreams(t *testing.T, c *mcpclient.Client, n int) {
	t.Helper()
	var info struct {
		Gets int `json:"gets"`
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if json.Unmarshal([]byte(call(t, c, "http_info", `{}`).Text), &info) == nil && info.Gets >= n {
			return
		}
	}
	t.Fatalf("the client opened %d GET streams within 15s, want %d", info.Gets, n)
}
