package session

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseExternalRef(t *testing.T) {
	at := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in        string
		want      ExternalRef
		wantField string // "-" for a whole-input error; "" for success
	}{
		{in: "kind=ci-run,uri=https://ci.example.test/runs/4821,created_by=ci-orchestrator,read_only=true",
			want: ExternalRef{Kind: "ci-run", URI: "https://ci.example.test/runs/4821", CreatedBy: "ci-orchestrator", ReadOnly: true}},
		{in: "uri=s3://b/k,created_by=me,kind=obj_1", want: ExternalRef{Kind: "obj_1", URI: "s3://b/k", CreatedBy: "me"}},
		{in: "kind=k,uri=https://x/?a=1,2,3&b=c=d,created_by=me,read_only=false", want: ExternalRef{Kind: "k", URI: "https://x/?a=1,2,3&b=c=d", CreatedBy: "me"}},
		{in: "kind=k,uri=u,created_by=me,created_at=2026-08-07T12:00:00Z", want: ExternalRef{Kind: "k", URI: "u", CreatedBy: "me", CreatedAt: at}},
		{in: "kind=k,uri=u,created_by=Jane Doe (ops)", want: ExternalRef{Kind: "k", URI: "u", CreatedBy: "Jane Doe (ops)"}},
		{in: "", wantField: "-"},
		{in: "nonsense", wantField: "-"},
		{in: "kind=k,uri=u", wantField: "created_by"},
		{in: "uri=u,created_by=me", wantField: "kind"},
		{in: "kind=k,created_by=me", wantField: "uri"},
		{in: "kind=,uri=u,created_by=me", wantField: "kind"},
		{in: "kind=CI,uri=u,created_by=me", wantField: "kind"},
		{in: "kind=ci.run,uri=u,created_by=me", wantField: "kind"},
		{in: "kind=" + strings.Repeat("a", 65) + ",uri=u,created_by=me", wantField: "kind"},
		{in: "kind=" + strings.Repeat("a", 64) + ",uri=u,created_by=me", want: ExternalRef{Kind: strings.Repeat("a", 64), URI: "u", CreatedBy: "me"}},
		{in: "kind=k,uri=,created_by=me", wantField: "uri"},
		{in: "kind=k,uri=a\nb,created_by=me", wantField: "uri"},
		{in: "kind=k,uri=a\x7fb,created_by=me", wantField: "uri"},
		{in: "kind=k,uri=a\u0085b,created_by=me", wantField: "uri"},
		{in: "kind=k,uri=" + strings.Repeat("é", 2048) + ",created_by=me", want: ExternalRef{Kind: "k", URI: strings.Repeat("é", 2048), CreatedBy: "me"}},
		{in: "kind=k,uri=" + strings.Repeat("u", 2049) + ",created_by=me", wantField: "uri"},
		{in: "kind=k,uri=u,created_by=", wantField: "created_by"},
		{in: "kind=k,uri=u,created_by=" + strings.Repeat("c", 129), wantField: "created_by"},
		{in: "kind=k,uri=u,created_by=me,read_only=yes", wantField: "read_only"},
		{in: "kind=k,uri=u,created_by=me,created_at=yesterday", wantField: "created_at"},
		{in: "kind=k,kind=j,uri=u,created_by=me", wantField: "kind"},
		{in: "kind=k,uri=u,created_by=me,color=red", wantField: "color"},
		{in: "kind=k,junk,uri=u,created_by=me", wantField: "-"},
		{in: "kind=k,uri=u,created_by=\xff", wantField: "created_by"},
		{in: strings.Repeat("x", MaxRefSpecBytes+1), wantField: "-"},
	}
	for _, tc := range tests {
		name := tc.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			got, err := ParseExternalRef(tc.in)
			if tc.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			var re *RefError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("err %v, want *RefError", err)
			}
			wantField := tc.wantField
			if wantField == "-" {
				wantField = ""
			}
			if re.Field != wantField {
				t.Fatalf("field %q, want %q (%v)", re.Field, wantField, err)
			}
			if wantField != "" && !strings.Contains(err.Error(), wantField) {
				t.Fatalf("message %q does not name %s", err, wantField)
			}
		})
	}
}

func TestMergeRefs(t *testing.T) {
	now := time.Date(2026, 8, 7, 12, 0, 0, 0, time.FixedZone("x", 3600))
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	existing := []ExternalRef{{Kind: "a", URI: "u", CreatedBy: "c", ReadOnly: true, CreatedAt: old}}
	add := []ExternalRef{
		{Kind: "a", URI: "u", CreatedBy: "c"},                 // duplicate of existing
		{Kind: "a", URI: "u", CreatedBy: "d"},                 // differs by created_by
		{Kind: "b", URI: "u", CreatedBy: "c"},                 // differs by kind
		{Kind: "a", URI: "v", CreatedBy: "c"},                 // differs by uri
		{Kind: "b", URI: "u", CreatedBy: "c", ReadOnly: true}, // duplicate within add
	}
	got := MergeRefs(existing, add, now)
	if len(got) != 4 {
		t.Fatalf("got %d refs: %+v", len(got), got)
	}
	if !got[0].CreatedAt.Equal(old) || !got[0].ReadOnly {
		t.Fatalf("existing ref changed: %+v", got[0])
	}
	for _, r := range got[1:] {
		if !r.CreatedAt.Equal(now) || r.CreatedAt.Location() != time.UTC {
			t.Fatalf("created_at not stamped in UTC: %+v", r)
		}
	}
	if got[2].ReadOnly {
		t.Fatal("a later duplicate replaced the first")
	}
	if !add[1].CreatedAt.IsZero() {
		t.Fatal("MergeRefs modified its input")
	}
	if len(MergeRefs(nil, nil, now)) != 0 {
		t.Fatal("merge of nothing is not empty")
	}
}

// FuzzParseExternalRef: refs come from the command line and from job
// payloads. Parsing never panics; every accepted ref validates, and its
// fields are within the schema.
func FuzzParseExternalRef(f *testing.F) {
	for _, s := range []string{
		"kind=ci-run,uri=https://ci.example.test/runs/4821,created_by=ci-orchestrator,read_only=true",
		"kind=k,uri=https://x/?a=1,2,3&b=c=d,created_by=me",
		"kind=k,uri=u,created_by=me,created_at=2026-08-07T12:00:00Z",
		"kind=k,uri=a\nb,created_by=me",
		"kind=K,uri=u,created_by=me",
		"kind=k,kind=k,uri=u,created_by=me",
		"created_by=me,uri=u,,kind=k",
		"kind=k,uri=u,created_by=\xff\xfe",
		"=,=,=",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseExternalRef(s)
		if err != nil {
			var re *RefError
			if !errors.As(err, &re) || !utf8.ValidString(err.Error()) {
				t.Fatalf("error %q is not a *RefError with valid UTF-8", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted ref fails Validate: %v", err)
		}
		if !strings.Contains(s, "kind="+r.Kind) || !strings.Contains(s, "uri="+r.URI) || !strings.Contains(s, "created_by="+r.CreatedBy) {
			t.Fatalf("parsed %+v does not come from %q", r, s)
		}
	})
}
