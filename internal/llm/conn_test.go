package llm_test

import (
	"context"
	"net"
	"net/http"
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
