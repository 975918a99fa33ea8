package llm_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// TestConnectionsAreReused checks that a finished stream leaves its
// connection reusable: a new TCP (and, for real providers, TLS) handshake
// per call would cost far more than parsing.
func TestConnectionsAreReused(t *testing.T) {
	for _, stream := range []bool{true, false} {
		h := llmtest.NewScriptHandler(func(llmtest.Recorded) llmtest.Turn {
			return llmtest.Turn{Content: "some answer", ToolCalls: []llmtest.Call{{Name: "f", Arguments: `{"a":1}`}}}
		})
		var conns atomic.Int32
		t.Cleanup(h.Close)
		srv := newCountingServer(t, h, &conns)
		c := newClient(t, llm.Config{BaseURL: srv + "/v1", DisableStreaming: !stream})
		for i := 0; i < 5; i++ {
			if _, err := c.Complete(context.Background(), userReq("q")); err != nil {
				t.Fatal(err)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("stream=%v: %d connections for 5 sequential calls, want 1", stream, n)
		}
	}
}

func newCountingServer(t *testing.T, h http.Handler, conns *atomic.Int32) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestConcurrentCallsKeepTheirBodies shares one client between goroutines
// whose requests differ, with big messages (cached encodings) and pooled
// body buffers: every reply must answer its own request.
func TestConcurrentCallsKeepTheirBodies(t *testing.T) {
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		return llmtest.Reply("echo:" + r.LastMessage().Content[:16])
	})
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	shared := strings.Repeat("shared system prompt ", 100)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				tag := fmt.Sprintf("g%02d-i%02d-%s", g, i, strings.Repeat("z", 600))
				req := llm.Request{Model: "m", Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: shared},
					{Role: llm.RoleUser, Content: tag},
				}}
				res, err := c.Complete(context.Background(), req)
				if err != nil {
					errs <- err
					return
				}
				if want := "echo:" + tag[:16]; res.Message.Content != want {
					errs <- fmt.Errorf("reply %q, want %q", res.Message.Content, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if srv.Calls() != 80 {
		t.Errorf("calls = %d", srv.Calls())
	}
}
