package mcpclient_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

type traceSeen struct {
	Meta   string `json:"meta_traceparent"`
	State  string `json:"meta_tracestate"`
	Header string `json:"header_traceparent"`
}

func seen(t *testing.T, ctx context.Context, c *mcpclient.Client) traceSeen {
	t.Helper()
	res, err := c.Call(ctx, "trace_seen", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var s traceSeen
	if err := json.Unmarshal([]byte(res.Text), &s); err != nil {
		t.Fatalf("%s: %v", res.Text, err)
	}
	return s
}

// A tools/call is a client span under the caller's span, and the server
// receives that span's context: in params._meta over stdio and HTTP, and
// in the traceparent header over Streamable HTTP (issue 24). The fixture
// is a real subprocess that reports what it received.
func TestCallCarriesTraceToTheServer(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint(), ScheduleWait: 10 * time.Millisecond}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			var c *mcpclient.Client
			if transport == "stdio" {
				c = mcptest.Start(t, mcptest.Config(t, "fx", "-chaos"))
			} else {
				c = mcptest.Start(t, mcptest.HTTPConfig(t, "fx", mcptest.HTTPFixture(t, "-chaos")))
			}
			ctx, tool := telemetry.Start(context.Background(), "execute_tool trace_seen")
			got := seen(t, ctx, c)
			tool.End()
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			var mcp *struct{ tid, sid, parent string }
			for _, s := range rcv.Spans() {
				if s.GetName() == "tools/call fx" && telemetrytest.Hex(s.GetParentSpanId()) == tool.SpanContext().SpanID().String() {
					mcp = &struct{ tid, sid, parent string }{telemetrytest.Hex(s.GetTraceId()), telemetrytest.Hex(s.GetSpanId()), telemetrytest.Hex(s.GetParentSpanId())}
					if v, _ := telemetrytest.Attr(s, telemetry.KeyToolName); v != "trace_seen" {
						t.Errorf("gen_ai.tool.name = %v", v)
					}
				}
			}
			if mcp == nil {
				t.Fatal("no tools/call span under the tool's span")
			}
			want := "00-" + mcp.tid + "-" + mcp.sid + "-01"
			if got.Meta != want {
				t.Errorf("_meta.traceparent = %q, want the request span's %q", got.Meta, want)
			}
			if transport == "http" && got.Header != want {
				t.Errorf("traceparent header = %q, want %q", got.Header, want)
			}
			if transport == "stdio" && got.Header != "" {
				t.Errorf("stdio fixture saw a header %q", got.Header)
			}
		})
	}
}

// With tracing off a trace the process was given still reaches the
// server unchanged, and with no trace nothing is added to _meta.
func TestCallPassesGivenTraceWhenOff(t *testing.T) {
	if telemetry.On() {
		t.Skip("another test turned tracing on")
	}
	c := mcptest.Start(t, mcptest.Config(t, "fx", "-chaos"))
	if got := seen(t, context.Background(), c); got.Meta != "" || got.State != "" {
		t.Fatalf("no trace, but _meta carried %+v", got)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := telemetry.FromMap(context.Background(), map[string]string{"traceparent": tp, "tracestate": "odek=1"})
	if got := seen(t, ctx, c); got.Meta != tp || got.State != "odek=1" {
		t.Fatalf("_meta = %+v, want %s", got, tp)
	}
}
