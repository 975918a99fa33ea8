package telemetry

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A message written in place (beginMessage/endMessage) is byte for byte
// the field a length-prefixed copy of its body makes, at every length
// whose varint needs another byte.
func TestInPlaceMessageLengths(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 1<<21 - 1, 1 << 21} {
		body := bytes.Repeat([]byte{0xAB}, n)
		want := appendTag([]byte("prefix"), 7, wireBytes)
		want = appendLenBytes(want, body)

		got, m := beginMessage([]byte("prefix"), 7)
		got = append(got, body...)
		got = endMessage(got, m)
		if !bytes.Equal(got, want) {
			t.Fatalf("body of %d bytes: encoded %d bytes, want %d", n, len(got), len(want))
		}
		if l, k := binary.Uvarint(got[len("prefix")+1:]); int(l) != n || k <= 0 {
			t.Fatalf("body of %d bytes: length field says %d", n, l)
		}
	}
}

type keep struct{ spans []sdktrace.ReadOnlySpan }

func (k *keep) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (k *keep) OnEnd(s sdktrace.ReadOnlySpan)                   { k.spans = append(k.spans, s) }
func (k *keep) Shutdown(context.Context) error                  { return nil }
func (k *keep) ForceFlush(context.Context) error                { return nil }

func batchOfSpans(tb testing.TB, n int) []spanData {
	k := &keep{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(k))
	tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer(ScopeName)
	for i := range n {
		_, s := tr.Start(context.Background(), "chat m", trace.WithSpanKind(trace.SpanKindClient))
		s.SetAttributes(attribute.String(KeyOperation, OpChat), attribute.String(KeyRequestModel, "m"),
			attribute.Int(KeyIteration, i), attribute.Int(KeyInputTokens, 100+i), attribute.Float64(KeyTTFT, 0.001),
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{"tool_calls"}))
		s.AddEvent("gen_ai.first_chunk")
		s.End()
	}
	out := make([]spanData, len(k.spans))
	for i, s := range k.spans {
		out[i] = s
	}
	return out
}

// Encoding a batch allocates per batch, not per span or per attribute
// (the only allocation per span left is the otel API's copy of a
// string-slice value, the finish reasons): the export of a long run's
// spans leaves the GC next to nothing. The encoder that built each
// nested message in a slice of its own made ~25 allocations a span.
func TestEncodeSpansAllocatesPerBatch(t *testing.T) {
	spans := batchOfSpans(t, 200)
	allocs := testing.AllocsPerRun(20, func() { _ = encodeSpans(spans, nil, nil) })
	if max := float64(len(spans) + 10); allocs > max {
		t.Fatalf("encoding %d spans allocates %v times, want at most %v", len(spans), allocs, max)
	}
}

func BenchmarkEncodeSpans(b *testing.B) {
	spans := batchOfSpans(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		_ = encodeSpans(spans, nil, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
}
