package telemetry

import (
	"encoding/binary"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// This file encodes finished spans as an OTLP ExportTraceServiceRequest
// (opentelemetry/proto/collector/trace/v1) in the protobuf wire format by
// hand. The upstream OTLP exporters reach the same bytes through the
// generated message types, which link the protobuf reflection runtime and
// (even the HTTP one) google.golang.org/grpc: about 18 MB of the odek
// binary and ~5 MiB of every CLI process's resident set, paid at start-up
// by runs that trace nothing (issue 25, docs/ARCHITECTURE.md). The field
// numbers below are those of opentelemetry/proto/trace/v1/trace.proto,
// common/v1/common.proto and resource/v1/resource.proto; the tests decode
// the output with the generated types to hold them to it.

// spanData is what the encoder reads of a finished span: an SDK span's
// snapshot (sdktrace.ReadOnlySpan) or one of odek's own (liteSpan).
type spanData interface {
	SpanContext() trace.SpanContext
	Parent() trace.SpanContext
	Name() string
	SpanKind() trace.SpanKind
	StartTime() time.Time
	EndTime() time.Time
	Attributes() []attribute.KeyValue
	DroppedAttributes() int
	Events() []sdktrace.Event
	DroppedEvents() int
	Links() []sdktrace.Link
	DroppedLinks() int
	Status() sdktrace.Status
	Resource() *resource.Resource
	InstrumentationScope() instrumentation.Scope
}

// encodeSpans returns the ExportTraceServiceRequest for spans, grouped by
// resource and then by instrumentation scope, in their order, and for the
// liteSpans encoded in the chunks of lite (ScopeSpans.spans fields,
// appendLite), which belong to resource liteRes and scope liteScope.
func encodeSpans(spans []spanData, lite [][]byte, liteRes *resource.Resource) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []spanData
		lite  [][]byte
	}
	type resGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	var groups []*resGroup
	// Resources seen, by pointer: the SDK's spans and odek's own carry
	// equal resources behind different pointers, compared once a batch.
	type seenRes struct {
		res *resource.Resource
		g   *resGroup
	}
	var seen []seenRes
	if len(lite) > 0 {
		rg := &resGroup{res: liteRes, scopes: []*scopeGroup{{scope: liteScope, lite: lite}}}
		groups, seen = append(groups, rg), append(seen, seenRes{liteRes, rg})
	}
	for i, s := range spans {
		var rg *resGroup
		r := s.Resource()
		for _, x := range seen {
			if x.res == r {
				rg = x.g
				break
			}
		}
		if rg == nil {
			for _, g := range groups {
				if g.res.Equal(r) {
					rg = g
					break
				}
			}
			if rg == nil {
				rg = &resGroup{res: r}
				groups = append(groups, rg)
			}
			seen = append(seen, seenRes{r, rg})
		}
		sc := s.InstrumentationScope()
		var sg *scopeGroup
		for _, g := range rg.scopes {
			if g.scope.Name == sc.Name && g.scope.Version == sc.Version && g.scope.SchemaURL == sc.SchemaURL &&
				g.scope.Attributes.Equals(&sc.Attributes) {
				sg = g
				break
			}
		}
		if sg == nil {
			sg = &scopeGroup{scope: sc, spans: make([]spanData, 0, len(spans)-i)} // one group, usually
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}

	// One buffer, each nested message written in place behind a length
	// placeholder (beginMessage/endMessage): no per-message slices.
	liteLen := 0
	for _, c := range lite {
		liteLen += len(c)
	}
	out := make([]byte, 0, 64+320*len(spans)+liteLen+256)
	for _, g := range groups {
		var rs int
		out, rs = beginMessage(out, 1) // ExportTraceServiceRequest.resource_spans
		if g.res != nil {
			var r int
			out, r = beginMessage(out, 1) // ResourceSpans.resource
			for _, kv := range g.res.Attributes() {
				out = appendKeyValue(out, 1, kv)
			}
			out = endMessage(out, r)
		}
		for _, sg := range g.scopes {
			var ss, sc int
			out, ss = beginMessage(out, 2) // ResourceSpans.scope_spans
			out, sc = beginMessage(out, 1) // ScopeSpans.scope
			out = appendString(out, 1, sg.scope.Name)
			out = appendString(out, 2, sg.scope.Version)
			for _, kv := range sg.scope.Attributes.ToSlice() {
				out = appendKeyValue(out, 3, kv)
			}
			out = endMessage(out, sc)
			for _, s := range sg.spans {
				var sp int
				out, sp = beginMessage(out, 2) // ScopeSpans.spans
				out = appendSpan(out, s)
				out = endMessage(out, sp)
			}
			for _, c := range sg.lite {
				out = append(out, c...) // already ScopeSpans.spans fields
			}
			out = appendString(out, 3, sg.scope.SchemaURL)
			out = endMessage(out, ss)
		}
		if g.res != nil {
			out = appendString(out, 3, g.res.SchemaURL())
		}
		out = endMessage(out, rs)
	}
	return out
}

// appendLite appends s as a ScopeSpans.spans field: a liteSpan encoded
// when it ends, for encodeSpans to copy into its scope.
func appendLite(b []byte, s *liteSpan) []byte {
	b, m := beginMessage(b, 2)
	b = appendSpan(b, s)
	return endMessage(b, m)
}

// OTLP span flags: bits 0–7 are the W3C trace flags; these two say whether
// the span's parent is known to be remote (trace.proto SpanFlags).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func appendSpan(b []byte, s spanData) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytesField(b, 1, tid[:])
	b = appendBytesField(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	flags := uint32(sc.TraceFlags()) | flagHasIsRemote
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = appendBytesField(b, 4, psid[:])
		if p.IsRemote() {
			flags |= flagIsRemote
		}
	}
	b = appendString(b, 5, s.Name())
	if k := s.SpanKind(); k != 0 {
		b = appendTag(b, 6, wireVarint)
		b = binary.AppendUvarint(b, uint64(k)) // trace.SpanKind numbers are OTLP's
	}
	b = appendTime(b, 7, s.StartTime().UnixNano())
	b = appendTime(b, 8, s.EndTime().UnixNano())
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, 9, kv)
	}
	b = appendUint(b, 10, uint64(s.DroppedAttributes()))
	var m int
	for _, e := range s.Events() {
		b, m = beginMessage(b, 11)
		b = appendTime(b, 1, e.Time.UnixNano())
		b = appendString(b, 2, e.Name)
		for _, kv := range e.Attributes {
			b = appendKeyValue(b, 3, kv)
		}
		b = appendUint(b, 4, uint64(e.DroppedAttributeCount))
		b = endMessage(b, m)
	}
	b = appendUint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b, m = beginMessage(b, 13)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytesField(b, 1, ltid[:])
		b = appendBytesField(b, 2, lsid[:])
		b = appendString(b, 3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			b = appendKeyValue(b, 4, kv)
		}
		b = appendUint(b, 5, uint64(l.DroppedAttributeCount))
		lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
		if l.SpanContext.IsRemote() {
			lflags |= flagIsRemote
		}
		b = appendTag(b, 6, wireFixed32)
		b = binary.LittleEndian.AppendUint32(b, lflags)
		b = endMessage(b, m)
	}
	b = appendUint(b, 14, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset {
		b, m = beginMessage(b, 15)
		b = appendString(b, 2, st.Description)
		code := uint64(1) // STATUS_CODE_OK
		if st.Code == codes.Error {
			code = 2 // STATUS_CODE_ERROR (the otel API numbers the two the other way round)
		}
		b = appendUint(b, 3, code)
		b = endMessage(b, m)
	}
	b = appendTag(b, 16, wireFixed32)
	return binary.LittleEndian.AppendUint32(b, flags)
}

// appendKeyValue appends kv as a KeyValue message in field num.
func appendKeyValue(b []byte, num fieldNum, kv attribute.KeyValue) []byte {
	b, m := beginMessage(b, num)
	b = appendString(b, 1, string(kv.Key))
	var v int
	b, v = beginMessage(b, 2)
	b = appendAnyValue(b, kv.Value)
	b = endMessage(b, v)
	return endMessage(b, m)
}

// appendAnyValue appends the fields of an AnyValue message for v.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = appendTag(b, 2, wireVarint)
		return binary.AppendUvarint(b, boolVarint(v.AsBool()))
	case attribute.INT64:
		b = appendTag(b, 3, wireVarint)
		return binary.AppendUvarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendTag(b, 4, wireFixed64)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendTag(b, 1, wireBytes)
		return appendLenString(b, v.AsString())
	case attribute.BYTESLICE:
		b = appendTag(b, 7, wireBytes)
		return appendLenBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		b, m := beginMessage(b, 6)
		for _, kv := range v.AsMap() {
			b = appendKeyValue(b, 1, kv)
		}
		return endMessage(b, m)
	}
	return b // EMPTY: an AnyValue with no value set
}

// beginMessage appends the tag of a length-delimited field num and a
// one-byte length placeholder, and returns where the message's body
// starts; endMessage then writes the length. Nested messages are thus
// encoded in place, in one buffer.
func beginMessage(b []byte, num fieldNum) ([]byte, int) {
	b = appendTag(b, num, wireBytes)
	b = append(b, 0)
	return b, len(b)
}

// endMessage fills in the length of the message begun at start (the
// body is b[start:]), moving the body up when its length needs more than
// the placeholder's byte.
func endMessage(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	b = append(b, l[:k-1]...) // room for the extra length bytes
	copy(b[start+k-1:], b[start:start+n])
	copy(b[start-1:], l[:k])
	return b
}

// appendString appends a string field, leaving out the default "" as
// protobuf does.
func appendString(b []byte, num fieldNum, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, wireBytes)
	return appendLenString(b, s)
}

func appendBytesField(b []byte, num fieldNum, v []byte) []byte {
	b = appendTag(b, num, wireBytes)
	return appendLenBytes(b, v)
}

func appendUint(b []byte, num fieldNum, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, wireVarint)
	return binary.AppendUvarint(b, v)
}

func appendTime(b []byte, num fieldNum, unixNano int64) []byte {
	if unixNano <= 0 {
		return b
	}
	b = appendTag(b, num, wireFixed64)
	return binary.LittleEndian.AppendUint64(b, uint64(unixNano))
}

// The protobuf wire format (protobuf.dev/programming-guides/encoding): a
// field is a varint key (number<<3 | wire type) followed by a varint, 8 or
// 4 little-endian bytes, or a varint length and that many bytes.
type fieldNum uint64

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendTag(b []byte, num fieldNum, typ uint64) []byte {
	return binary.AppendUvarint(b, uint64(num)<<3|typ)
}

func appendLenBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func appendLenString(b []byte, v string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func boolVarint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// appendArray appends xs as an AnyValue's array_value (field 5): an
// ArrayValue whose values (field 1) are each x as an AnyValue.
func appendArray[T any](b []byte, xs []T, value func(T) attribute.Value) []byte {
	b, arr := beginMessage(b, 5)
	for _, x := range xs {
		var m int
		b, m = beginMessage(b, 1)
		b = appendAnyValue(b, value(x))
		b = endMessage(b, m)
	}
	return endMessage(b, arr)
}
