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

// inMsg is the decoded form of one line. Result and ID keep their raw
// bytes (copied out of the line by encoding/json).
type inMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// decodeLine parses and classifies one line. For kindResponse, id is the
// request id. A response carrying both result and error keeps only the
// error (fail closed); one carrying neither has msg.Result == nil and
// msg.Error == nil, which the caller reports as ErrProtocol. Pure.
func decodeLine(line []byte) (msg inMsg, kind msgKind, id uint64) {
	if len(line) == 0 || line[0] != '{' {
		// Skip leading whitespace only when present; the common case is a
		// bare object.
		line = bytes.TrimLeft(line, " \t\r")
		if len(line) == 0 || line[0] != '{' {
			return inMsg{}, kindInvalid, 0
		}
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		return inMsg{}, kindInvalid, 0
	}
	hasID := len(msg.ID) > 0 && !bytes.Equal(msg.ID, []byte("null"))
	if msg.Method != "" {
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
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	b = append(b, `,"error":{"code":-32601,"message":`...)
	b = appendJSONString(b, "Method not found: "+clipDisplay(method, 128))
	return append(b, "}}\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return append(b, enc...)
}

// callParams builds the params of tools/call. args must be a JSON object
// (or empty/null for none); it is compacted so the request stays one line.
// tool must be a valid name (no escaping needed, but it is quoted anyway).
func callParams(buf *bytes.Buffer, tool string, args []byte) error {
	buf.WriteString(`{"name":`)
	buf.Write(strconv.AppendQuote(buf.AvailableBuffer(), tool))
	buf.WriteString(`,"arguments":`)
	a := bytes.TrimSpace(args)
	if len(a) == 0 || bytes.Equal(a, []byte("null")) {
		buf.WriteString("{}}")
		return nil
	}
	if a[0] != '{' {
		return ErrInvalidArgs
	}
	if err := json.Compact(buf, a); err != nil {
		return ErrInvalidArgs
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
