package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// TestHTTP2OnlyOverTLS checks both sides of the default transport's HTTP/2
// choice: an https endpoint is spoken to over HTTP/2, and a plaintext one
// over HTTP/1.1 without the HTTP/2 transport ever being set up (the
// transport registers "h2" in TLSNextProto when it configures HTTP/2).
func TestHTTP2OnlyOverTLS(t *testing.T) {
	answer := llmtest.NewScriptHandler(func(llmtest.Recorded) llmtest.Turn {
		return llmtest.Turn{Content: "ok"}
	})
	t.Cleanup(answer.Close)
	var proto atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int32(r.ProtoMajor))
		answer.ServeHTTP(w, r)
	})

	t.Run("https", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(h)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		c := newClient(t, llm.Config{BaseURL: srv.URL + "/v1"})
		tr := llm.DefaultTransportOf(c)
		if tr == nil || !tr.ForceAttemptHTTP2 {
			t.Fatal("https endpoint: the default transport does not attempt HTTP/2")
		}
		// Trust the test server's certificate (srv.Client's TLS config).
		tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		if _, err := c.Complete(context.Background(), userReq("q")); err != nil {
			t.Fatal(err)
		}
		if p := proto.Load(); p != 2 {
			t.Errorf("https endpoint spoken to over HTTP/%d, want HTTP/2", p)
		}
	})

	t.Run("http", func(t *testing.T) {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		c := newClient(t, llm.Config{BaseURL: srv.URL + "/v1"})
		tr := llm.DefaultTransportOf(c)
		if tr == nil || tr.ForceAttemptHTTP2 {
			t.Fatal("http endpoint: the default transport attempts HTTP/2")
		}
		if _, err := c.Complete(context.Background(), userReq("q")); err != nil {
			t.Fatal(err)
		}
		if p := proto.Load(); p != 1 {
			t.Errorf("http endpoint spoken to over HTTP/%d, want HTTP/1.1", p)
		}
		if tr.TLSNextProto != nil {
			t.Errorf("the HTTP/2 transport was set up for a plaintext endpoint (TLSNextProto %v)", tr.TLSNextProto)
		}
	})
}
