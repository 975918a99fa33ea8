package artifacts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Schema names of the odek-extension/v1 contract.
const (
	// EnvelopeSchema is the schema field of a tool-result envelope.
	EnvelopeSchema = "odek.tool-result/v1"
	// RefSchema is the schema field of every artifact ref.
	RefSchema = "odek.artifact-ref/v1"
)

// envelopeMarker is what makes broken JSON count as an attempted envelope.
const envelopeMarker = "odek.tool-result"

// Envelope is a decoded odek.tool-result/v1 envelope. Unknown fields are
// ignored. Its refs are not yet validated: pass them to Validator.Validate.
type Envelope struct {
	// Text is the compact summary for the model; empty when absent.
	Text string
	// Artifacts are the refs as the server sent them.
	Artifacts []RefSpec
}

// RefSpec is an odek.artifact-ref/v1 as it appears on the wire.
type RefSpec struct {
	Schema    string `json:"schema"`
	ID        string `json:"id"`
	URI       string `json:"uri"`
	MediaType string `json:"media_type"`
	// SHA256 is the lowercase hex digest; empty when absent.
	SHA256 string `json:"sha256"`
	// SizeBytes is the size in bytes; nil when absent.
	SizeBytes *int64 `json:"size_bytes"`
	Summary   string `json:"summary"`
}

// wireEnvelope decodes the fields odek reads. A JSON null for text or
// artifacts counts as absent.
type wireEnvelope struct {
	Schema    string    `json:"schema"`
	Text      *string   `json:"text"`
	Artifacts []RefSpec `json:"artifacts"`
}

// ParseEnvelope detects an odek.tool-result/v1 envelope in the text of one
// content item. It returns (nil, nil) for plain text, the decoded envelope
// when the text is one, and an error wrapping ErrMalformedEnvelope when the
// text claims the envelope schema but is not valid JSON or has a field of
// the wrong type. See the package documentation for the exact rule.
func ParseEnvelope(text string) (*Envelope, error) {
	trimmed := strings.TrimLeft(text, " \t\r\n")
	if !strings.HasPrefix(trimmed, "{") {
		return nil, nil
	}
	data := []byte(trimmed)
	if !json.Valid(data) {
		if strings.Contains(trimmed, envelopeMarker) {
			return nil, fmt.Errorf("%w: text starts with '{' and mentions %q but is not valid JSON", ErrMalformedEnvelope, envelopeMarker)
		}
		return nil, nil // prose that happens to start with '{'
	}
	var probe struct {
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		// Valid JSON that is an object (it starts with '{'): cannot fail,
		// but fail closed if it ever does.
		return nil, fmt.Errorf("%w: %v", ErrMalformedEnvelope, err)
	}
	schema := bytes.TrimSpace(probe.Schema)
	if len(schema) == 0 || schema[0] != '"' {
		if len(schema) > 0 && !bytes.Equal(schema, []byte("null")) && bytes.Contains(schema, []byte(envelopeMarker)) {
			return nil, fmt.Errorf("%w: schema is not a string", ErrMalformedEnvelope)
		}
		return nil, nil
	}
	var name string
	if err := json.Unmarshal(schema, &name); err != nil || name != EnvelopeSchema {
		return nil, nil // another schema (or a future version): plain text
	}
	var w wireEnvelope
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformedEnvelope, describeJSONError(err))
	}
	env := &Envelope{Artifacts: w.Artifacts}
	if w.Text != nil {
		env.Text = *w.Text
	}
	return env, nil
}

// describeJSONError names the field and type of a decoding error without
// echoing the value.
func describeJSONError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		field := te.Field
		if field == "" {
			field = "(envelope)"
		}
		return fmt.Sprintf("field %q: got JSON %s, want %s", field, te.Value, te.Type)
	}
	return err.Error()
}
