package llm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Limits on what the client accepts from an endpoint.
const (
	// MaxSSELineBytes bounds one line of a server-sent-events stream
	// (without its line terminator). One chunk is one line, so this is also
	// the largest single chunk; it leaves room for a tool call whose
	// arguments arrive in one piece.
	MaxSSELineBytes = 8 << 20
	// MaxResponseBytes bounds a whole response body, streamed or not.
	MaxResponseBytes = 32 << 20
	// MaxErrorBodyBytes bounds how much of a non-2xx body is read to
	// build the APIError.
	MaxErrorBodyBytes = 64 << 10
)

// sseReader splits a text/event-stream body into the data of its events
// (WHATWG HTML, "server-sent events"): "data:" lines are joined with "\n",
// a blank line ends an event, comment lines (":") and the other fields
// (event, id, retry) are ignored, a line ends at "\n" or "\r\n" (a lone
// "\r" is not treated as a line end). A final event not followed by a
// blank line is still delivered at EOF, which tolerates servers that close
// right after their last "data:" line.
type sseReader struct {
	r       *bufio.Reader
	maxLine int
	long    []byte // a line that did not fit the bufio buffer
	data    []byte // data of the event being read
	hasData bool
	eof     bool
}

func (s *sseReader) reset(r *bufio.Reader, maxLine int) {
	s.r, s.maxLine = r, maxLine
	s.long, s.data = s.long[:0], s.data[:0]
	s.hasData, s.eof = false, false
}

// next returns the data of the next event, valid until the next call, or
// io.EOF at the end of the body, or the body's read error, or a
// *LineTooLongError.
func (s *sseReader) next() ([]byte, error) {
	s.data, s.hasData = s.data[:0], false
	for {
		if s.eof {
			if s.hasData {
				s.hasData = false
				return s.data, nil
			}
			return nil, io.EOF
		}
		line, err := s.readLine()
		if err != nil {
			if err != io.EOF {
				return nil, err
			}
			s.eof = true
			if len(line) == 0 {
				continue
			}
		}
		if len(line) == 0 {
			if s.hasData {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	}
}

// readLine returns the next line without its terminator, valid until the
// next call. At the end of the body it returns the unterminated rest (maybe
// empty) with io.EOF.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == nil || err == io.EOF {
		if len(line) > s.maxLine+2 { // room for "\r\n"
			line = trimEOL(line)
			if len(line) > s.maxLine {
				return nil, &LineTooLongError{Limit: s.maxLine, Observed: len(line)}
			}
		}
		return trimEOL(line), err
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	s.long = append(s.long[:0], line...)
	for {
		if len(s.long) > s.maxLine+1 {
			return nil, &LineTooLongError{Limit: s.maxLine, Observed: len(s.long)}
		}
		line, err = s.r.ReadSlice('\n')
		s.long = append(s.long, line...)
		if err == nil || err == io.EOF {
			l := trimEOL(s.long)
			if len(l) > s.maxLine {
				return nil, &LineTooLongError{Limit: s.maxLine, Observed: len(l)}
			}
			return l, err
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
