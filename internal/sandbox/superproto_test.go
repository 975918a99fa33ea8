package sandbox

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestCallRoundTripAcrossRecords(t *testing.T) {
	big := strings.Repeat("x", 3*maxRecord) // the body spans several records
	c := call{argv: []string{"sh", "-c", big}, env: []string{"PATH=/usr/bin", "HOME=/tmp/j"}, dir: "/work/root"}
	body, err := encodeCall(c)
	if err != nil {
		t.Fatal(err)
	}
	recs := callRecords(7, body)
	if len(recs) < 4 {
		t.Fatalf("%d records for a %d-byte body", len(recs), len(body))
	}
	var asm callAssembler
	for i, b := range recs {
		if len(b) > maxRecord {
			t.Fatalf("record %d: %d bytes, over %d", i, len(b), maxRecord)
		}
		r, err := parseRecord(b)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		done, err := asm.add(r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if done != (i == len(recs)-1) {
			t.Fatalf("record %d: done %v", i, done)
		}
	}
	got, err := decodeCall(asm.body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.argv, c.argv) || !slices.Equal(got.env, c.env) || got.dir != c.dir {
		t.Errorf("round trip changed the call")
	}
}

// Each malformed input is refused with an error naming what is wrong.
func TestSupervisorRecordsRefuseBadInput(t *testing.T) {
	good, _ := encodeCall(call{argv: []string{"true"}})
	hdr := func(typ byte, id uint64, n uint32, data string) []byte {
		return appendRecord(nil, record{typ: typ, id: id, n: n, data: []byte(data)})
	}
	for _, tc := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"short", []byte{recExit, 1}, "shorter than the 13-byte header"},
		{"huge", make([]byte, maxRecord+1), "over the limit of 32768"},
		{"unknown type", hdr(9, 1, 0, ""), "unknown type 9"},
		{"exit with payload", hdr(recExit, 1, 0, "x"), "want none"},
		{"start over the body limit", hdr(recStart, 1, maxCallBody+1, ""), "over the limit of 4194304"},
		{"start with more than announced", hdr(recStart, 1, 1, "ab"), "more than the 1 announced"},
		{"id 0", hdr(recExit, 0, 0, ""), "call id 0"},
		{"empty more", hdr(recMore, 1, 0, ""), "empty"},
	} {
		if _, err := parseRecord(tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"truncated", good[:3], "argv count: truncated"},
		{"count beyond the bytes", []byte{0xff, 0xff, 0, 0, 0, 0}, "more than the 2 bytes left can hold"},
		{"count over the limit", []byte{0xff, 0xff, 0xff, 0xff}, "over the limit of 65536"},
		{"string beyond the bytes", []byte{1, 0, 0, 0, 9, 0, 0, 0, 'a'}, "argv[0]: 9 bytes announced, 1 left"},
		{"trailing bytes", append(slices.Clone(good), 0), "1 bytes after the directory"},
		{"no command", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "no command"},
		{"NUL in argv", []byte{1, 0, 0, 0, 3, 0, 0, 0, 'a', 0, 'b', 0, 0, 0, 0, 0, 0, 0, 0}, "argv[0] holds a NUL byte"},
	} {
		if _, err := decodeCall(tc.body); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	var asm callAssembler
	if _, err := asm.add(record{typ: recMore, id: 3, data: []byte("x")}); err == nil {
		t.Error("a continuation without a start was taken")
	}
	asm = callAssembler{}
	if _, err := asm.add(record{typ: recStart, id: 3, n: 2, data: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := asm.add(record{typ: recMore, id: 4, data: []byte("b")}); err == nil || !strings.Contains(err.Error(), "for call 4, while gathering call 3") {
		t.Errorf("a continuation of another call: %v", err)
	}
	if _, err := asm.add(record{typ: recMore, id: 3, data: []byte("bc")}); err == nil || !strings.Contains(err.Error(), "more bytes than the 2 announced") {
		t.Errorf("an overlong continuation: %v", err)
	}
}

// FuzzSupervisorRecords feeds both parsers arbitrary bytes: neither may
// panic or allocate beyond its bounds, and what decodes re-encodes to the
// same bytes.
func FuzzSupervisorRecords(f *testing.F) {
	body, _ := encodeCall(call{argv: []string{"sh", "-c", "true"}, env: []string{"PATH=/usr/bin"}, dir: "/r"})
	for _, r := range callRecords(1, body) {
		f.Add(r)
	}
	f.Add(body)
	f.Add(appendRecord(nil, record{typ: recExit, id: 2, n: 256}))
	f.Add(appendRecord(nil, record{typ: recReady, n: 4242}))
	f.Add(appendRecord(nil, record{typ: recKill, id: 9}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := parseRecord(b); err == nil {
			if !bytes.Equal(appendRecord(nil, r), b) {
				t.Errorf("record %x re-encodes differently", b)
			}
			var asm callAssembler
			_, _ = asm.add(r)
		}
		c, err := decodeCall(b)
		if err != nil {
			return
		}
		again, err := encodeCall(c)
		if err != nil {
			t.Fatalf("a decoded call does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Errorf("call %x re-encodes as %x", b, again)
		}
	})
}
