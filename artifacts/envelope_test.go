package artifacts

import (
	"errors"
	"testing"
)

func TestParseEnvelope(t *testing.T) {
	size := int64(12)
	tests := []struct {
		name     string
		text     string
		want     *Envelope // nil: plain text
		wantErr  error
		wantRefs int
	}{
		{name: "plain text", text: "hello world"},
		{name: "empty", text: ""},
		{name: "brace prose", text: "{not json at all"},
		{name: "json without schema", text: `{"a":1}`},
		{name: "json array", text: `[{"schema":"odek.tool-result/v1"}]`},
		{name: "other schema", text: `{"schema":"odek.tool-result/v2","text":"x"}`},
		{name: "schema null", text: `{"schema":null}`},
		{name: "schema number", text: `{"schema":5}`},
		{name: "minimal envelope", text: `{"schema":"odek.tool-result/v1"}`, want: &Envelope{}},
		{name: "leading whitespace", text: " \n\t{\"schema\":\"odek.tool-result/v1\",\"text\":\"hi\"}", want: &Envelope{Text: "hi"}},
		{name: "escaped schema", text: `{"schema":"\u006fdek.tool-result\/v1","text":"hi"}`, want: &Envelope{Text: "hi"}},
		{name: "unknown fields ignored", text: `{"schema":"odek.tool-result/v1","text":"t","extra":{"x":[1]},"artifacts":[{"schema":"odek.artifact-ref/v1","id":"a","uri":"file:///x","media_type":"text/plain","size_bytes":12,"new_field":true}]}`,
			want: &Envelope{Text: "t", Artifacts: []RefSpec{{Schema: RefSchema, ID: "a", URI: "file:///x", MediaType: "text/plain", SizeBytes: &size}}}, wantRefs: 1},
		{name: "null text and artifacts", text: `{"schema":"odek.tool-result/v1","text":null,"artifacts":null}`, want: &Envelope{}},
		{name: "broken json claiming schema", text: `{"schema":"odek.tool-result/v1","text":"unterminated`, wantErr: ErrMalformedEnvelope},
		{name: "trailing garbage", text: `{"schema":"odek.tool-result/v1"} trailing`, wantErr: ErrMalformedEnvelope},
		{name: "text wrong type", text: `{"schema":"odek.tool-result/v1","text":42}`, wantErr: ErrMalformedEnvelope},
		{name: "artifacts wrong type", text: `{"schema":"odek.tool-result/v1","artifacts":{"id":"a"}}`, wantErr: ErrMalformedEnvelope},
		{name: "size wrong type", text: `{"schema":"odek.tool-result/v1","artifacts":[{"size_bytes":"12"}]}`, wantErr: ErrMalformedEnvelope},
		{name: "size fractional", text: `{"schema":"odek.tool-result/v1","artifacts":[{"size_bytes":1.5}]}`, wantErr: ErrMalformedEnvelope},
		{name: "ref not object", text: `{"schema":"odek.tool-result/v1","artifacts":["file:///x"]}`, wantErr: ErrMalformedEnvelope},
		{name: "schema array mentioning marker", text: `{"schema":["odek.tool-result/v1"]}`, wantErr: ErrMalformedEnvelope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := ParseEnvelope(tt.text)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if (env == nil) != (tt.want == nil) {
				t.Fatalf("envelope = %+v, want %+v", env, tt.want)
			}
			if env == nil {
				return
			}
			if env.Text != tt.want.Text || len(env.Artifacts) != tt.wantRefs {
				t.Fatalf("envelope = %+v, want text %q and %d refs", env, tt.want.Text, tt.wantRefs)
			}
			for i, r := range tt.want.Artifacts {
				got := env.Artifacts[i]
				if got.ID != r.ID || got.URI != r.URI || got.MediaType != r.MediaType || (r.SizeBytes != nil) != (got.SizeBytes != nil) || r.SizeBytes != nil && *r.SizeBytes != *got.SizeBytes {
					t.Fatalf("ref %d = %+v, want %+v", i, got, r)
				}
			}
		})
	}
}

func TestParseEnvelopeErrorDoesNotEchoValues(t *testing.T) {
	_, err := ParseEnvelope(`{"schema":"odek.tool-result/v1","text":{"secret":"hunter2"}}`)
	if err == nil {
		t.Fatal("want error")
	}
	if got := err.Error(); contains(got, "hunter2") {
		t.Fatalf("error echoes the value: %s", got)
	}
}
