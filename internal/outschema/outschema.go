// Package outschema checks a run's final answer against a JSON Schema
// (draft 2020-12 unless the schema's $schema says otherwise) for `odek run
// --output-schema` and a queued job's output_schema: the answer must be a
// JSON value (optionally inside one ```json fence) valid against the
// schema. A Checker, set as the run's agent.Config.CheckAnswer, answers an
// invalid final answer with a corrective user message (up to N times, in
// the same run and conversation) and an output_invalid event; after them
// the run's front end fails with *InvalidError (exit code
// ExitOutputInvalid).
//
// Validation is github.com/santhosh-tekuri/jsonschema/v6. Schemas load
// from bytes only: every external $ref is refused (no file or network
// access from a schema).
//
// A Schema is immutable and safe for concurrent use; a Checker belongs
// to one run.
package outschema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/odekrun/odek/events"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits.
const (
	// MaxSchemaBytes bounds a schema file.
	MaxSchemaBytes = 1 << 20
	// MaxAnswerBytes bounds the answer that is parsed.
	MaxAnswerBytes = 4 << 20
	// DefaultRepairs is the number of corrective turns by default;
	// MaxRepairs the most allowed.
	DefaultRepairs = 2
	MaxRepairs     = 5
	// MaxReasons bounds the validation errors reported (to the model and
	// in the error).
	MaxReasons = 10
)

// ExitOutputInvalid is the exit code of a run whose answer stayed invalid
// (distinct from agent's 0–4 and 130).
const ExitOutputInvalid = 5

// EventOutputInvalid is the event type emitted for each invalid answer.
const EventOutputInvalid = "output_invalid"

// Errors.
var (
	// ErrSchema: the schema file is unusable; the error names the limit
	// or the compiler's complaint.
	ErrSchema = errors.New("outschema: invalid output schema")
	// ErrOutputInvalid: the answer is not valid JSON for the schema.
	// *InvalidError wraps it.
	ErrOutputInvalid = errors.New("outschema: the answer does not match the output schema")
)

// InvalidError reports an answer that is not JSON or not valid against
// the schema.
type InvalidError struct {
	// NotJSON is set when the answer did not parse as JSON.
	NotJSON bool
	// Reasons are the validation errors ("at /path: message"), at most
	// MaxReasons.
	Reasons []string
	// Attempts is how many answers were checked (set by Drive).
	Attempts int
}

func (e *InvalidError) Error() string {
	msg := ErrOutputInvalid.Error()
	if e.Attempts > 0 {
		msg += fmt.Sprintf(" after %d answers", e.Attempts)
	}
	return msg + ": " + strings.Join(e.Reasons, "; ")
}

func (e *InvalidError) Unwrap() error { return ErrOutputInvalid }

// Schema is a compiled output schema.
type Schema struct {
	sch *jsonschema.Schema
	// Raw is the schema document as given (for the model's instructions
	// and for providers' response_format).
	Raw []byte
}

// LoadFile reads and compiles the schema at path.
func LoadFile(path string) (*Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	defer f.Close()
	b := make([]byte, MaxSchemaBytes+1)
	n, _ := readFull(f, b)
	if n > MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes (MaxSchemaBytes)", ErrSchema, path, MaxSchemaBytes)
	}
	return Compile(b[:n])
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not loaded (schemas must be self-contained)", clip(url, 120))
}

// Compile compiles a schema document (JSON). Draft 2020-12 applies unless
// $schema names another draft; formats are asserted.
func Compile(doc []byte) (*Schema, error) {
	if len(doc) > MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d (MaxSchemaBytes)", ErrSchema, len(doc), MaxSchemaBytes)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrSchema, err)
	}
	if _, ok := v.(map[string]any); !ok {
		if _, isBool := v.(bool); !isBool {
			return nil, fmt.Errorf("%w: a schema is a JSON object (or true/false)", ErrSchema)
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	const loc = "mem:///output-schema.json"
	if err := c.AddResource(loc, v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, clip(err.Error(), 500))
	}
	return &Schema{sch: sch, Raw: append([]byte(nil), doc...)}, nil
}

// Extract returns the JSON text of an answer: the answer trimmed, or the
// inside of a single fenced block (```json … ``` or ``` … ```) that is
// the whole answer. A pure function.
func Extract(answer string) string {
	s := strings.TrimSpace(answer)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	nl := strings.IndexByte(inner, '\n')
	if nl < 0 {
		return s
	}
	if tag := strings.TrimSpace(inner[:nl]); tag != "" && !strings.EqualFold(tag, "json") {
		return s
	}
	inner = inner[nl+1:]
	if strings.Contains(inner, "```") {
		return s
	}
	return strings.TrimSpace(inner)
}

// Check parses the answer (see Extract) and validates it. It returns the
// parsed value, or an *InvalidError.
func (s *Schema) Check(answer string) (any, error) {
	text := Extract(answer)
	if len(text) > MaxAnswerBytes {
		return nil, &InvalidError{NotJSON: true, Reasons: []string{fmt.Sprintf("the answer is %d bytes, limit %d", len(text), MaxAnswerBytes)}}
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, &InvalidError{NotJSON: true, Reasons: []string{"the answer is not a JSON value: " + clip(err.Error(), 200)}}
	}
	if err := s.sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &InvalidError{Reasons: []string{clip(err.Error(), 300)}}
		}
		return nil, &InvalidError{Reasons: reasons(ve)}
	}
	return v, nil
}

// reasons flattens a validation error to its leaf messages.
func reasons(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(u *jsonschema.OutputUnit)
	walk = func(u *jsonschema.OutputUnit) {
		if len(out) >= MaxReasons {
			return
		}
		if u.Error != nil && len(u.Errors) == 0 {
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			out = append(out, "at "+clip(loc, 120)+": "+clip(u.Error.String(), 200))
		}
		for i := range u.Errors {
			walk(&u.Errors[i])
		}
	}
	walk(ve.BasicOutput())
	if len(out) == 0 {
		out = []string{clip(ve.Error(), 300)}
	}
	return out
}

// Instructions is the text added to the goal of the first turn.
func (s *Schema) Instructions() string {
	return "\n\nYour final answer must be only a JSON value (no prose, no code fence needed) that is valid against this JSON Schema:\n" + clip(string(s.Raw), 16000)
}

// Corrective is the user message of a repair turn.
func Corrective(err *InvalidError) string {
	var b strings.Builder
	b.WriteString("Your final answer does not match the required JSON Schema:\n")
	for _, r := range err.Reasons {
		b.WriteString("- " + r + "\n")
	}
	b.WriteString("Answer again with only the corrected JSON value.")
	return b.String()
}

// InvalidData is the payload of the output_invalid event: which answer
// (1-based) of how many allowed, whether it was JSON, the reasons.
type InvalidData struct {
	Attempt, MaxAttempts int
	NotJSON              bool
	Reasons              []string
}

// EventType implements events.Payload.
func (InvalidData) EventType() events.Type { return EventOutputInvalid }

// Data implements events.Payload.
func (d InvalidData) Data() map[string]any {
	return map[string]any{"attempt": d.Attempt, "max_attempts": d.MaxAttempts, "not_json": d.NotJSON, "reasons": d.Reasons}
}

// Checker checks the final answers of one run (agent.Config.CheckAnswer):
// an invalid answer gets a corrective user message while repairs are
// left, then is accepted by the loop and reported by Err. Safe for
// concurrent use, though the loop calls it from one goroutine.
type Checker struct {
	s       *Schema
	repairs int

	mu       sync.Mutex
	attempts int
	value    any
	err      *InvalidError
}

// NewChecker checks against s with up to repairs corrective turns
// (clamped to 0..MaxRepairs).
func NewChecker(s *Schema, repairs int) *Checker {
	return &Checker{s: s, repairs: min(max(repairs, 0), MaxRepairs)}
}

// Check is agent.Config.CheckAnswer: "" and nil for a valid answer; for
// an invalid one the output_invalid payload and, while repairs are left,
// the corrective message (the loop then asks again).
func (c *Checker) Check(answer string) (corrective string, ev events.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts++
	v, err := c.s.Check(answer)
	if err == nil {
		c.value, c.err = v, nil
		return "", nil
	}
	ie := err.(*InvalidError)
	ie.Attempts = c.attempts
	c.value, c.err = nil, ie
	data := InvalidData{Attempt: c.attempts, MaxAttempts: c.repairs + 1, NotJSON: ie.NotJSON, Reasons: ie.Reasons}
	if c.attempts > c.repairs {
		return "", data
	}
	return Corrective(ie), data
}

// Result is the parsed last answer, or the *InvalidError when it was
// invalid (or ErrOutputInvalid when no answer was checked: the run ended
// before answering).
func (c *Checker) Result() (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return nil, c.err
	case c.attempts == 0:
		return nil, fmt.Errorf("%w: the run gave no final answer", ErrOutputInvalid)
	}
	return c.value, nil
}

// Attempts is the number of answers checked.
func (c *Checker) Attempts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
