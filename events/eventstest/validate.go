// Package eventstest checks odek.event/v1 streams against the contract in
// EXTENSIONS.md, for end-to-end tests that read an events file:
// ValidateLine checks one JSON line (envelope and per-type data fields),
// ValidateStream a whole stream (one run id, Seq order, a single final
// event, tool calls paired by call_id, budget_exceeded before run_failed).
//
// Both follow the contract's additive rule: unknown event types and unknown
// fields are accepted. Both are pure functions, safe for concurrent use.
package eventstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/events"
)

// MaxLineBytes is the longest line ValidateStream reads: 4 MiB.
const MaxLineBytes = 4 << 20

// maxErrors caps the violations ValidateStream reports.
const maxErrors = 50

// Options relax ValidateStream. The zero value is the strict contract.
type Options struct {
	// AllowGaps accepts Seq numbers that skip values (events dropped by a
	// full emitter buffer); Seq must still increase. When a gap is seen,
	// tool calls whose other half may have been dropped are not reported.
	AllowGaps bool
	// AllowArgs accepts data.args on tool_call_started, which only
	// --events-include-args adds.
	AllowArgs bool
}

// Error is one violation of the contract.
type Error struct {
	// Line is the 1-based line number in the stream; 0 from ValidateLine.
	Line int
	// Seq is the event's seq when known, else 0.
	Seq uint64
	// Field is the JSON path of the offending field ("seq",
	// "data.call_id"); empty for stream rules about several events.
	Field  string
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("eventstest: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Seq > 0 {
		fmt.Fprintf(&b, "seq %d: ", e.Seq)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// ValidateLine checks one JSON line (without or with its trailing newline)
// and returns the decoded event; numbers in its Data are json.Number. It rejects data.args; ValidateStream
// accepts it with Options.AllowArgs. All violations of the line are joined
// in the error, each an *Error.
func ValidateLine(line []byte) (events.Event, error) {
	ev, _, errs := validateLine(line, Options{})
	return ev, errors.Join(errs...)
}

// ValidateStream reads JSON lines from r until EOF, checks each as
// ValidateLine does and the stream as a whole, and returns the events that
// decoded. All violations (up to 50) are joined in the error, each an
// *Error.
func ValidateStream(r io.Reader, opts Options) ([]events.Event, error) {
	var (
		evs  []events.Event
		errs []error
		st   = newStreamState(opts)
	)
	br := bufio.NewReader(r)
	for lineNo := 1; len(errs) < maxErrors; lineNo++ {
		line, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, &Error{Line: lineNo, Reason: err.Error()})
			break
		}
		ev, decoded, lerrs := validateLine(line, opts)
		for _, e := range lerrs {
			e.(*Error).Line = lineNo
		}
		errs = append(errs, lerrs...)
		if !decoded {
			continue // not a JSON object; already reported
		}
		evs = append(evs, ev)
		errs = append(errs, st.add(lineNo, ev)...)
	}
	errs = append(errs, st.finish()...)
	if len(errs) > maxErrors {
		errs = errs[:maxErrors]
	}
	return evs, errors.Join(errs...)
}

// readLine returns the next line without its newline, io.EOF at the end,
// or an error for a line over MaxLineBytes or a final line without a
// newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLineBytes {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, fmt.Errorf("last line has no newline (truncated write?)")
		default:
			return nil, err
		}
	}
}

// validateLine checks one line; every error is an *Error. decoded is false
// when the line is not a JSON object.
func validateLine(line []byte, opts Options) (ev events.Event, decoded bool, errs []error) {
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{Seq: ev.Seq, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	top, err := decodeObject(line)
	if err != nil {
		bad("", "%v", err)
		return events.Event{}, false, errs
	}
	// Seq first, so that later errors can name it.
	if n, ok := top["seq"].(json.Number); ok {
		if v, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
			ev.Seq = v
		}
	}
	if ev.Seq < 1 {
		bad("seq", "want an integer ≥ 1, got %s", show(top["seq"]))
	}
	ev.Schema, _ = top["schema"].(string)
	if ev.Schema != events.Schema {
		bad("schema", "want %q, got %s", events.Schema, show(top["schema"]))
	}
	typ, ok := top["type"].(string)
	if !ok || typ == "" {
		bad("type", "want a non-empty string, got %s", show(top["type"]))
	}
	ev.Type = events.Type(typ)
	if s, ok := top["run_id"].(string); !ok || !isHex(s, 32) {
		bad("run_id", "want 32 lower-case hex digits, got %s", show(top["run_id"]))
	} else {
		ev.RunID = s
	}
	if v, present := top["session_id"]; present {
		if s, ok := v.(string); !ok || s == "" {
			bad("session_id", "want a non-empty string when present, got %s", show(v))
		} else {
			ev.SessionID = s
		}
	}
	if s, ok := top["timestamp"].(string); !ok {
		bad("timestamp", "want an RFC 3339 string, got %s", show(top["timestamp"]))
	} else if t, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
		bad("timestamp", "want RFC 3339 in UTC (ending in Z), got %q", s)
	} else {
		ev.Timestamp = t
	}
	if v, present := top["iteration"]; present {
		n, ok := integer(v)
		switch {
		case !ok || n < 1:
			bad("iteration", "want an integer ≥ 1 when present, got %s", show(v))
		case isPlanEvent(ev.Type):
			bad("iteration", "plan events carry no iteration")
		default:
			ev.Iteration = int(n)
		}
	} else if ev.Type == events.IterationCompleted || isToolEvent(ev.Type) {
		bad("iteration", "missing; %s needs an iteration ≥ 1", ev.Type)
	}
	if v, present := top["tool"]; present {
		if s, ok := v.(string); !ok || s == "" {
			bad("tool", "want a non-empty string when present, got %s", show(v))
		} else {
			ev.Tool = s
		}
	} else if isToolEvent(ev.Type) {
		bad("tool", "missing; %s needs the tool name", ev.Type)
	}
	var data map[string]any
	if v, present := top["data"]; present {
		if data, ok = v.(map[string]any); !ok {
			bad("data", "want an object, got %s", show(v))
		}
	}
	ev.Data = data
	errs = append(errs, checkData(ev, data, opts)...)
	return ev, true, errs
}

// checkData checks data against the per-type table.
func checkData(ev events.Event, data map[string]any, opts Options) (errs []error) {
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{Seq: ev.Seq, Field: "data." + field, Reason: fmt.Sprintf(format, args...)})
	}
	// A line the file sink shrank lists the fields it dropped.
	var excused []string
	if v, present := data["truncated_fields"]; present {
		list, ok := v.([]any)
		for _, x := range list {
			s, isString := x.(string)
			ok = ok && isString
			excused = append(excused, s)
		}
		if !ok {
			bad("truncated_fields", "want an array of strings, got %s", show(v))
		}
		if n, ok := integer(data["line_bytes"]); !ok || n < 1 {
			bad("line_bytes", "a shrunk event needs line_bytes ≥ 1, got %s", show(data["line_bytes"]))
		}
	}
	for _, f := range dataFields[ev.Type] {
		v, present := data[f.name]
		switch {
		case !present && (f.optional || slices.Contains(excused, f.name)):
		case !present:
			bad(f.name, "missing; required for %s", ev.Type)
		default:
			if reason := f.check(v); reason != "" {
				bad(f.name, "%s", reason)
			}
		}
	}
	if _, present := data["args"]; present && ev.Type == events.ToolCallStarted && !opts.AllowArgs {
		bad("args", "raw arguments present without the include-args opt-in")
	}
	return errs
}

// check returns why v does not fit f, or "".
func (f field) check(v any) string {
	switch f.kind {
	case kText:
		if s, ok := v.(string); !ok || s == "" {
			return "want a non-empty string, got " + show(v)
		}
	case kBool:
		if _, ok := v.(bool); !ok {
			return "want true or false, got " + show(v)
		}
	case kCount, kPositiveInt:
		least := int64(0)
		if f.kind == kPositiveInt {
			least = 1
		}
		if n, ok := integer(v); !ok || n < least {
			return fmt.Sprintf("want an integer ≥ %d, got %s", least, show(v))
		}
	case kNumber, kPositive:
		x, ok := number(v)
		if !ok || x < 0 || f.kind == kPositive && x == 0 {
			if f.kind == kPositive {
				return "want a number > 0 (omit the field when zero or unknown), got " + show(v)
			}
			return "want a number ≥ 0, got " + show(v)
		}
	case kHex64, kHex16:
		n := 64
		if f.kind == kHex16 {
			n = 16
		}
		if s, ok := v.(string); !ok || !isHex(s, n) {
			return fmt.Sprintf("want %d lower-case hex digits, got %s", n, show(v))
		}
	case kObject:
		if _, ok := v.(map[string]any); !ok {
			return "want an object, got " + show(v)
		}
	case kClass:
		if s, ok := v.(string); !ok || !isClass(s) {
			return "want a stable class name ([a-z][a-z0-9_]*, at most 64 bytes; never raw error text), got " + show(v)
		}
	case kEnum:
		if s, ok := v.(string); !ok || !slices.Contains(f.enum, s) {
			return fmt.Sprintf("want one of %s, got %s", strings.Join(f.enum, ", "), show(v))
		}
	}
	return ""
}

// decodeObject decodes line as exactly one JSON object, numbers kept as
// json.Number.
func decodeObject(line []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, errors.New("empty line")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return nil, errors.New("more than one JSON value on the line")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", show(v))
	}
	return m, nil
}

func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	return i, err == nil
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	x, err := n.Float64()
	return x, err == nil && !math.IsInf(x, 0)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isClass(s string) bool {
	if s == "" || len(s) > 64 || !('a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// show renders a decoded JSON value for an error message, shortened.
func show(v any) string {
	if v == nil {
		return "null or nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
