package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The wire format between a Jail and its job's supervisor (supervise.go,
// supervisor_linux.go): records on a SOCK_SEQPACKET socketpair, so the
// kernel keeps each record whole and the stdio descriptors of a call
// travel (SCM_RIGHTS) with the record that starts it.
//
// A record is a 13-byte header — type (1 byte), call id (8), a number (4,
// little-endian) — and a payload of at most maxRecord bytes in all:
//
//	recStart  Jail → supervisor  id, n = body length, payload = the body's
//	                             first bytes; carries 3 fds (stdin,
//	                             stdout, stderr)
//	recMore   Jail → supervisor  id, payload = the next bytes of the body
//	recKill   Jail → supervisor  id: SIGKILL the call's process group
//	recReady  supervisor → Jail  id 0, n = the supervisor's pid: confined,
//	                             serving
//	recExit   supervisor → Jail  id, n = the wait status of the call's
//	                             command (a call the supervisor could not
//	                             start ends as the helper would: a message
//	                             on the call's stderr and status 126/127)
//
// A call's body (encodeCall) is argv, env and the working directory as
// length-prefixed strings. Both ends read the other's records as
// untrusted: every length is checked against what is left and against a
// fixed bound, unknown types and trailing bytes are errors, and the
// errors say which field and which limit. The supervisor runs in a job's
// domain, so the Jail treats a malformed record as a broken supervisor
// and kills it (docs/SECURITY.md).

const (
	recStart byte = 1
	recMore  byte = 2
	recKill  byte = 3
	recReady byte = 4
	recExit  byte = 5
)

const (
	recHeader = 13
	// maxRecord bounds one record, header included; a body longer than
	// a record's room continues in recMore records.
	maxRecord = 32 << 10
	// maxCallBody bounds a call's argv, env and directory together: what
	// execve(2) takes at most (ARG_MAX with the default 8 MiB stack is
	// 2 MiB) with room for the length prefixes.
	maxCallBody = 4 << 20
	// maxCallStrings bounds argv and env, each.
	maxCallStrings = 1 << 16
	// callFDs is how many descriptors a recStart carries.
	callFDs = 3
)

// record is one decoded record; data aliases the buffer it was read from.
type record struct {
	typ  byte
	id   uint64
	n    uint32
	data []byte
}

func recName(t byte) string {
	switch t {
	case recStart:
		return "start"
	case recMore:
		return "more"
	case recKill:
		return "kill"
	case recReady:
		return "ready"
	case recExit:
		return "exit"
	}
	return fmt.Sprintf("unknown (%d)", t)
}

// appendRecord appends the encoding of r to b.
func appendRecord(b []byte, r record) []byte {
	b = append(b, r.typ)
	b = binary.LittleEndian.AppendUint64(b, r.id)
	b = binary.LittleEndian.AppendUint32(b, r.n)
	return append(b, r.data...)
}

// parseRecord decodes one record and checks it against the rules of its
// type.
func parseRecord(b []byte) (record, error) {
	if len(b) < recHeader {
		return record{}, fmt.Errorf("supervisor record: %d bytes, shorter than the %d-byte header", len(b), recHeader)
	}
	if len(b) > maxRecord {
		return record{}, fmt.Errorf("supervisor record: %d bytes, over the limit of %d", len(b), maxRecord)
	}
	r := record{typ: b[0], id: binary.LittleEndian.Uint64(b[1:9]), n: binary.LittleEndian.Uint32(b[9:13]), data: b[recHeader:]}
	switch r.typ {
	case recStart:
		if r.n > maxCallBody {
			return record{}, fmt.Errorf("supervisor record start: body of %d bytes, over the limit of %d", r.n, maxCallBody)
		}
		if uint64(len(r.data)) > uint64(r.n) {
			return record{}, fmt.Errorf("supervisor record start: %d bytes of body in a record, more than the %d announced", len(r.data), r.n)
		}
	case recMore:
		if len(r.data) == 0 {
			return record{}, errors.New("supervisor record more: empty")
		}
	case recKill, recReady, recExit:
		if len(r.data) != 0 {
			return record{}, fmt.Errorf("supervisor record %s: %d bytes of payload, want none", recName(r.typ), len(r.data))
		}
	default:
		return record{}, fmt.Errorf("supervisor record: unknown type %d", r.typ)
	}
	if r.id == 0 && r.typ != recReady {
		return record{}, fmt.Errorf("supervisor record %s: call id 0", recName(r.typ))
	}
	return r, nil
}

// call is what a recStart asks the supervisor to run.
type call struct {
	argv []string
	env  []string
	dir  string
}

// encodeCall is the body of a call; checkCall's errors first.
func encodeCall(c call) ([]byte, error) {
	if err := checkCall(c); err != nil {
		return nil, err
	}
	n := 12 + len(c.dir)
	for _, s := range c.argv {
		n += 4 + len(s)
	}
	for _, s := range c.env {
		n += 4 + len(s)
	}
	if n > maxCallBody {
		return nil, fmt.Errorf("sandbox: the command, its environment and directory take %d bytes, over the limit of %d", n, maxCallBody)
	}
	b := make([]byte, 0, n)
	for _, list := range [][]string{c.argv, c.env} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(list)))
		for _, s := range list {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.dir)))
	return append(b, c.dir...), nil
}

// checkCall checks what execve(2) would refuse or misread: no command, a
// NUL byte inside a string, too many strings.
func checkCall(c call) error {
	if len(c.argv) == 0 {
		return errors.New("sandbox: no command")
	}
	for _, f := range []struct {
		name string
		list []string
	}{{"argv", c.argv}, {"env", c.env}, {"dir", []string{c.dir}}} {
		if len(f.list) > maxCallStrings {
			return fmt.Errorf("sandbox: %s has %d strings, over the limit of %d", f.name, len(f.list), maxCallStrings)
		}
		for i, s := range f.list {
			if strings.IndexByte(s, 0) >= 0 {
				return fmt.Errorf("sandbox: %s[%d] holds a NUL byte", f.name, i)
			}
		}
	}
	return nil
}

// decodeCall decodes and checks a call's body.
func decodeCall(b []byte) (call, error) {
	if len(b) > maxCallBody {
		return call{}, fmt.Errorf("supervisor call: %d bytes, over the limit of %d", len(b), maxCallBody)
	}
	rest := b
	u32 := func(field string) (uint32, error) {
		if len(rest) < 4 {
			return 0, fmt.Errorf("supervisor call: %s: truncated", field)
		}
		v := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		return v, nil
	}
	str := func(field string) (string, error) {
		n, err := u32(field + " length")
		if err != nil {
			return "", err
		}
		if uint64(n) > uint64(len(rest)) {
			return "", fmt.Errorf("supervisor call: %s: %d bytes announced, %d left", field, n, len(rest))
		}
		s := string(rest[:n])
		rest = rest[n:]
		return s, nil
	}
	var c call
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"argv", &c.argv}, {"env", &c.env}} {
		count, err := u32(f.name + " count")
		if err != nil {
			return call{}, err
		}
		if count > maxCallStrings {
			return call{}, fmt.Errorf("supervisor call: %s count %d, over the limit of %d", f.name, count, maxCallStrings)
		}
		// Each string takes at least its 4-byte length: a count the
		// bytes left cannot hold is refused before anything is made.
		if uint64(count)*4 > uint64(len(rest)) {
			return call{}, fmt.Errorf("supervisor call: %s count %d, more than the %d bytes left can hold", f.name, count, len(rest))
		}
		list := make([]string, 0, count)
		for i := uint32(0); i < count; i++ {
			s, err := str(fmt.Sprintf("%s[%d]", f.name, i))
			if err != nil {
				return call{}, err
			}
			list = append(list, s)
		}
		*f.dst = list
	}
	dir, err := str("dir")
	if err != nil {
		return call{}, err
	}
	c.dir = dir
	if len(rest) != 0 {
		return call{}, fmt.Errorf("supervisor call: %d bytes after the directory", len(rest))
	}
	if err := checkCall(c); err != nil {
		return call{}, fmt.Errorf("supervisor call: %v", strings.TrimPrefix(err.Error(), "sandbox: "))
	}
	return c, nil
}

// callRecords splits the body of call id into the records that carry it.
func callRecords(id uint64, body []byte) [][]byte {
	room := maxRecord - recHeader
	first := body[:min(len(body), room)]
	out := [][]byte{appendRecord(nil, record{typ: recStart, id: id, n: uint32(len(body)), data: first})}
	for rest := body[len(first):]; len(rest) > 0; {
		chunk := rest[:min(len(rest), room)]
		out = append(out, appendRecord(nil, record{typ: recMore, id: id, data: chunk}))
		rest = rest[len(chunk):]
	}
	return out
}

// callAssembler gathers a call's body from its records.
type callAssembler struct {
	id   uint64
	want uint32
	body []byte
}

// add takes the next record of the call being gathered (or a recStart
// when none is); done reports whether the body is complete.
func (a *callAssembler) add(r record) (done bool, err error) {
	switch {
	case r.typ == recStart && a.id == 0:
		a.id, a.want = r.id, r.n
		a.body = append(make([]byte, 0, r.n), r.data...)
	case r.typ == recMore && a.id != 0 && r.id == a.id:
		if uint64(len(a.body))+uint64(len(r.data)) > uint64(a.want) {
			return false, fmt.Errorf("supervisor call %d: more bytes than the %d announced", r.id, a.want)
		}
		a.body = append(a.body, r.data...)
	case r.typ == recMore:
		return false, fmt.Errorf("supervisor record more: for call %d, while gathering call %d", r.id, a.id)
	default:
		return false, fmt.Errorf("supervisor record %s: while gathering call %d", recName(r.typ), a.id)
	}
	return uint32(len(a.body)) == a.want, nil
}
