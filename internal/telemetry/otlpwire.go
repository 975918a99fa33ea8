package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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

// encodeSpans returns the ExportTraceServiceRequest for spans, grouped by
// resource and then by instrumentation scope, in their order.
func encodeSpans(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	var groups []*resGroup
	for _, s := range spans {
		var rg *resGroup
		for _, g := range groups {
			if g.res == s.Resource() || g.res.Equal(s.Resource()) {
				rg = g
				break
			}
		}
		if rg == nil {
			rg = &resGroup{res: s.Resource()}
			groups = append(groups, rg)
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
			sg = &scopeGroup{scope: sc}
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}

	var out, rs, ss, buf []byte
	for _, g := range groups {
		rs = rs[:0]
		if g.res != nil {
			buf = buf[:0]
			for _, kv := range g.res.Attributes() {
				buf = appendKeyValue(buf, 1, kv)
			}
			rs = appendMessage(rs, 1, buf) // ResourceSpans.resource
		}
		for _, sg := range g.scopes {
			ss = ss[:0]
			buf = buf[:0] // InstrumentationScope
			buf = appendString(buf, 1, sg.scope.Name)
			buf = appendString(buf, 2, sg.scope.Version)
			for _, kv := range sg.scope.Attributes.ToSlice() {
				buf = appendKeyValue(buf, 3, kv)
			}
			ss = appendMessage(ss, 1, buf) // ScopeSpans.scope
			for _, s := range sg.spans {
				buf = appendSpan(buf[:0], s)
				ss = appendMessage(ss, 2, buf) // ScopeSpans.spans
			}
			ss = appendString(ss, 3, sg.scope.SchemaURL)
			rs = appendMessage(rs, 2, ss) // ResourceSpans.scope_spans
		}
		if g.res != nil {
			rs = appendString(rs, 3, g.res.SchemaURL())
		}
		out = appendMessage(out, 1, rs) // ExportTraceServiceRequest.resource_spans
	}
	return out
}

// OTLP span flags: bits 0–7 are the W3C trace flags; these two say whether
// the span's parent is known to be remote (trace.proto SpanFlags).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
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
	var buf []byte
	for _, e := range s.Events() {
		buf = buf[:0]
		buf = appendTime(buf, 1, e.Time.UnixNano())
		buf = appendString(buf, 2, e.Name)
		for _, kv := range e.Attributes {
			buf = appendKeyValue(buf, 3, kv)
		}
		buf = appendUint(buf, 4, uint64(e.DroppedAttributeCount))
		b = appendMessage(b, 11, buf)
	}
	b = appendUint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		buf = buf[:0]
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		buf = appendBytesField(buf, 1, ltid[:])
		buf = appendBytesField(buf, 2, lsid[:])
		buf = appendString(buf, 3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			buf = appendKeyValue(buf, 4, kv)
		}
		buf = appendUint(buf, 5, uint64(l.DroppedAttributeCount))
		lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
		if l.SpanContext.IsRemote() {
			lflags |= flagIsRemote
		}
		buf = appendTag(buf, 6, wireFixed32)
		buf = binary.LittleEndian.AppendUint32(buf, lflags)
		b = appendMessage(b, 13, buf)
	}
	b = appendUint(b, 14, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset {
		buf = buf[:0]
		buf = appendString(buf, 2, st.Description)
		code := uint64(1) // STATUS_CODE_OK
		if st.Code == codes.Error {
			code = 2 // STATUS_CODE_ERROR (the otel API numbers the two the other way round)
		}
		buf = appendUint(buf, 3, code)
		b = appendMessage(b, 15, buf)
	}
	b = appendTag(b, 16, wireFixed32)
	return binary.LittleEndian.AppendUint32(b, flags)
}

// appendKeyValue appends kv as a KeyValue message in field num.
func appendKeyValue(b []byte, num fieldNum, kv attribute.KeyValue) []byte {
	var body []byte
	body = appendString(body, 1, string(kv.Key))
	body = appendMessage(body, 2, appendAnyValue(nil, kv.Value))
	return appendMessage(b, num, body)
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
		var kvs []byte
		for _, kv := range v.AsMap() {
			kvs = appendKeyValue(kvs, 1, kv)
		}
		return appendMessage(b, 6, kvs)
	}
	return b // EMPTY: an AnyValue with no value set
}

func appendMessage(b []byte, num fieldNum, body []byte) []byte {
	b = appendTag(b, num, wireBytes)
	return appendLenBytes(b, body)
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
	var arr []byte
	for _, x := range xs {
		arr = appendMessage(arr, 1, appendAnyValue(nil, value(x)))
	}
	return appendMessage(b, 5, arr)
}
