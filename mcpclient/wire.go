package mcpclient

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// msgKind classifies one line from the server.
type msgKind int

const (
	kindInvalid      msgKind = iota // not JSON, or not a JSON-RPC message
	kindResponse                    // a response to one of our requests
	kindBadID                       // a response whose id is missing or not ours in form
	kindRequest                     // a server→client request (method + id)
	kindNotification                // method without id
)

// inMsg is the decoded form of one line. ID and Params alias the line
// (valid only until the next line is read); Result is a copy.
type inMsg struct {
	ID     json.RawMessage
	Method string
	// Params is set for requests and notifications only.
	Params json.RawMessage
	Result json.RawMessage
	Error  *wireError
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// decodeLine parses and classifies one line. For kindResponse, id is the
// request id. A response carrying both result and error keeps only the
// error (fail closed); one carrying neither has msg.Result == nil and
// msg.Error == nil, which the caller reports as ErrProtocol. Member names
// match exactly (JSON-RPC is case-sensitive) and the last of a repeated
// member wins. A line that is not a JSON object, or whose "method" is not
// a string or whose "error" is not an error object, is kindInvalid. Pure.
//
// This is the reader's hot path: the line is validated once (json.Valid,
// no allocation) and its top-level members are then located by a scanner
// that may assume valid JSON, instead of a reflective decode.
func decodeLine(line []byte) (msg inMsg, kind msgKind, id uint64) {
	if len(line) == 0 || line[0] != '{' {
		// Skip leading whitespace only when present; the common case is a
		// bare object.
		line = bytes.TrimLeft(line, " \t\r")
		if len(line) == 0 || line[0] != '{' {
			return inMsg{}, kindInvalid, 0
		}
	}
	if !json.Valid(line) {
		return inMsg{}, kindInvalid, 0
	}
	var result, errRaw, method, params []byte
	for i := 1; ; {
		i = skipSpace(line, i)
		if line[i] == '}' {
			break
		}
		if line[i] == ',' {
			i = skipSpace(line, i+1)
		}
		kEnd := skipString(line, i)
		key := line[i:kEnd]
		i = skipSpace(line, kEnd)
		i = skipSpace(line, i+1) // ':'
		vEnd := skipValue(line, i)
		val := line[i:vEnd]
		i = vEnd
		switch memberName(key) {
		case "id":
			msg.ID = val
		case "method":
			method = val
		case "result":
			result = val
		case "error":
			errRaw = val
		case "params":
			params = val
		}
	}
	if method != nil && !bytes.Equal(method, []byte("null")) {
		if method[0] != '"' {
			return inMsg{}, kindInvalid, 0
		}
		msg.Method = unquote(method)
	}
	if errRaw != nil && !bytes.Equal(errRaw, []byte("null")) {
		var e wireError
		if errRaw[0] != '{' || json.Unmarshal(errRaw, &e) != nil {
			return inMsg{}, kindInvalid, 0
		}
		msg.Error = &e
	}
	if result != nil {
		msg.Result = append(json.RawMessage(nil), result...)
	}
	hasID := len(msg.ID) > 0 && !bytes.Equal(msg.ID, []byte("null"))
	if msg.Method != "" {
		msg.Params = params
		if hasID {
			return msg, kindRequest, 0
		}
		return msg, kindNotification, 0
	}
	if !hasID {
		return msg, kindBadID, 0
	}
	n, err := strconv.ParseUint(string(msg.ID), 10, 64)
	if err != nil || n == 0 {
		return msg, kindBadID, 0
	}
	if msg.Error != nil {
		msg.Result = nil
	}
	if bytes.Equal(msg.Result, []byte("null")) {
		msg.Result = nil
	}
	return msg, kindResponse, n
}

// The scanners below assume valid JSON (decodeLine checked it) and return
// the index just past what they skipped.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString skips the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped character; \uXXXX's digits need no care
		case '"':
			return i + 1
		}
	}
}

// skipValue skips the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}

// memberName returns a member name (a quoted JSON string) unquoted,
// without allocating for the names decodeLine looks for.
func memberName(key []byte) string {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		switch string(inner) { // no allocation: compared, not kept
		case "id":
			return "id"
		case "method":
			return "method"
		case "result":
			return "result"
		case "error":
			return "error"
		case "params":
			return "params"
		}
		return ""
	}
	return unquote(key)
}

// unquote decodes a valid JSON string literal.
func unquote(q []byte) string {
	inner := q[1 : len(q)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(q, &s) // valid JSON string: cannot fail
	return s
}

// appendRequest appends one JSON-RPC request line (with its newline).
// params must be compact JSON (no newline) or nil.
func appendRequest(b []byte, id uint64, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":`...)
	b = strconv.AppendQuote(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

// appendNotification appends one JSON-RPC notification line.
func appendNotification(b []byte, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = strconv.AppendQuote(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

// cancelledParams are the params of notifications/cancelled for id.
func cancelledParams(id uint64, reason string) []byte {
	b := []byte(`{"requestId":`)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, reason)
	return append(b, '}')
}

// appendMethodNotFound appends the error answer to a server→client request.
// rawID is the request's id exactly as received (valid JSON, no newline).
func appendMethodNotFound(b []byte, rawID []byte, method string) []byte {
	return appendErrorAnswer(b, rawID, -32601, "Method not found: "+clipDisplay(method, 128))
}

// appendErrorAnswer appends a JSON-RPC error answer to a server→client
// request.
func appendErrorAnswer(b []byte, rawID []byte, code int, message string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	return append(b, "}}\n"...)
}

// appendResultAnswer appends a result answer to a server→client request;
// result must be compact JSON.
func appendResultAnswer(b []byte, rawID []byte, result []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return append(b, enc...)
}

// callParams builds the params of tools/call. args must be a JSON object
// (or empty/null for none); it is compacted so the request stays one line.
// tool must be a valid name (no escaping needed, but it is quoted anyway).
//
// A non-zero progressToken is sent as _meta.progressToken, asking the
// server for notifications/progress about this call. trace (the W3C
// traceparent and tracestate of the call's span, telemetry.ToMap) goes
// into _meta under those names, where servers that trace read it.
func callParams(buf *bytes.Buffer, tool string, args []byte, progressToken uint64, trace map[string]string) error {
	buf.WriteString(`{"name":`)
	buf.Write(strconv.AppendQuote(buf.AvailableBuffer(), tool))
	buf.WriteString(`,"arguments":`)
	a := bytes.TrimSpace(args)
	switch {
	case len(a) == 0 || bytes.Equal(a, []byte("null")):
		buf.WriteString("{}")
	case a[0] != '{':
		return ErrInvalidArgs
	default:
		if err := json.Compact(buf, a); err != nil {
			return ErrInvalidArgs
		}
	}
	if progressToken != 0 || len(trace) > 0 {
		buf.WriteString(`,"_meta":{`)
		sep := false
		if progressToken != 0 {
			buf.WriteString(`"progressToken":`)
			buf.Write(strconv.AppendUint(buf.AvailableBuffer(), progressToken, 10))
			sep = true
		}
		for _, k := range [...]string{"traceparent", "tracestate"} {
			if v := trace[k]; v != "" {
				if sep {
					buf.WriteByte(',')
				}
				buf.WriteString(`"` + k + `":`)
				buf.Write(appendJSONString(buf.AvailableBuffer(), v))
				sep = true
			}
		}
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
	return nil
}

// clipDisplay makes a server-supplied string safe for an error or log
// message: control characters removed, at most n code points.
func clipDisplay(s string, n int) string {
	out := make([]rune, 0, min(len(s), n))
	for _, r := range s {
		if len(out) == n {
			return string(out) + "…"
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError || r == 0x2028 || r == 0x2029 {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}
