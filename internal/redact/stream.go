package redact

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// MaxHold is the most text, in bytes, a Stream holds back waiting for the
// end of a possible secret (an unterminated quoted value, a PEM block
// without an END line, an endless token). Beyond it the Stream fails
// closed: it emits Marker in place of everything held, drops the text up
// to the next line break, and starts afresh there. Only then does its
// output differ from String of the whole text.
const MaxHold = 64 << 10

// Stream redacts text that arrives in pieces, such as streamed model output
// or a subprocess's stdout, so that no secret escapes because it was split
// across pieces: the concatenation of everything emitted equals String of
// the concatenation of everything written (see MaxHold for the one
// exception). It holds back only a possible secret's start at the end of
// the text seen so far: a prefix of a registered value, an unfinished
// token, an open quoted value of a secret-named key, an unfinished PEM
// block.
//
// A Stream belongs to one goroutine. emit is called synchronously from
// Write and Flush with non-empty strings.
type Stream struct {
	r    *Redactor
	emit func(string)
	buf  []byte
	// buf[:from] was emitted and is kept as look-behind context.
	from int
	// tried is len(buf) at the last detection run.
	tried int
	// discarding: MaxHold was exceeded; text is dropped up to the next
	// line break.
	discarding bool
}

// NewStream returns a Stream that passes redacted text to emit. A nil
// Redactor masks by pattern only.
func (r *Redactor) NewStream(emit func(string)) *Stream {
	return &Stream{r: r, emit: emit}
}

// Write adds chunk to the text and emits what can no longer be part of a
// secret.
func (s *Stream) Write(chunk string) {
	if s.discarding {
		nl := strings.IndexByte(chunk, '\n')
		if nl < 0 {
			return
		}
		chunk, s.discarding = chunk[nl:], false
	}
	if chunk == "" {
		return
	}
	s.buf = append(s.buf, chunk...)
	held := len(s.buf) - s.from
	// Re-running detection over a large held region on every small chunk
	// would cost quadratic time; wait until the new text is a quarter of
	// what is held. Holding longer never changes the output.
	if held > 4096 && len(s.buf)-s.tried < held/4 && held <= MaxHold {
		return
	}
	s.process(false)
}

// Flush ends the text: it emits everything held, redacted. A later Write
// starts a new text.
func (s *Stream) Flush() {
	s.process(true)
	s.buf = s.buf[:0]
	s.from, s.tried, s.discarding = 0, 0, false
}

func (s *Stream) process(atEOF bool) {
	if len(s.buf) == s.from {
		return
	}
	s.tried = len(s.buf)
	// The view is only read, and only until buf next changes.
	view := unsafe.String(unsafe.SliceData(s.buf), len(s.buf))
	var sc scan
	sc.init(view, s.from, atEOF)
	s.r.detect(&sc)
	// Cut where no span ends or crosses: a span ending at the cut could
	// merge with one starting there once more text arrives.
	// Before the end, cut at a rune boundary too: what is emitted is valid
	// UTF-8 whenever what was written is (a consumer may encode each piece
	// as a JSON string, which would turn half a rune into U+FFFD).
	cut := sc.pending
	for moved := true; moved; {
		moved = false
		for _, sp := range sc.spans {
			if sp.s < cut && (sp.e > cut || sp.e == cut && !atEOF) {
				cut, moved = sp.s, true
			}
		}
		if !atEOF && cut > s.from {
			if c := runeCut(view, cut); c != cut {
				cut, moved = c, true
			}
		}
	}
	if cut > s.from {
		settled := sc.spans[:0]
		for _, sp := range sc.spans {
			if sp.s < cut {
				settled = append(settled, sp)
			}
		}
		var out strings.Builder
		out.Grow(cut - s.from)
		writeRedacted(&out, view, s.from, cut, settled)
		s.emit(out.String())
		s.from = cut
	}
	if len(s.buf)-s.from > MaxHold {
		s.emit(Marker)
		held := s.buf[s.from:]
		s.buf = s.buf[:0]
		s.from, s.tried = 0, 0
		if nl := bytes.LastIndexByte(held, '\n'); nl >= 0 {
			// Resume after the last line break held, without the text
			// before it.
			s.buf = append(s.buf, held[nl:]...)
			s.process(atEOF)
		} else {
			s.discarding = true
		}
		return
	}
	// Keep lookBehind bytes of context; drop older text.
	if drop := s.from - lookBehind; drop > 0 && drop >= len(s.buf)/2 {
		n := copy(s.buf, s.buf[drop:])
		s.buf = s.buf[:n]
		s.from -= drop
		s.tried -= drop
	}
}

// runeCut moves cut back to the start of the rune that byte cut-1 belongs
// to when that rune does not end at cut (it continues after cut, or the
// text ends inside it). Invalid bytes are left where they are.
func runeCut(b string, cut int) int {
	i := cut - 1
	for i > 0 && i > cut-utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	if i < 0 || !utf8.RuneStart(b[i]) || utf8.FullRuneInString(b[i:cut]) {
		return cut
	}
	return i
}
