package mcpclient

import (
	"bufio"
	"errors"
	"io"
)

// readChunk is the size of the read buffer. Lines up to this size are
// returned straight from it without copying.
const readChunk = 64 << 10

// errPartialLine: stdout ended in the middle of a line.
var errPartialLine = errors.New("stdout ended in the middle of a line")

// lineReader returns newline-terminated lines of at most limit bytes
// (excluding the newline). A longer line is never held beyond the limit:
// it is read in readChunk pieces, and as soon as the bytes read exceed the
// limit the reader stops and reports errLineTooLong with the count.
// Memory held for one line is at most limit plus one chunk, and the total
// allocated while rejecting an oversized line is about limit bytes.
type lineReader struct {
	br     *bufio.Reader
	limit  int64
	chunks [][]byte
}

type lineTooLong struct{ observed int64 }

func (e *lineTooLong) Error() string { return "line too long" }

func newLineReader(r io.Reader, limit int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readChunk), limit: limit}
}

// next returns the next line without its '\n'. The slice is valid until
// the following call. Errors: *lineTooLong, errPartialLine (EOF inside a
// line), io.EOF (clean end), or the read error.
func (lr *lineReader) next() ([]byte, error) {
	line, err := lr.br.ReadSlice('\n')
	if err == nil {
		line = line[:len(line)-1]
		if int64(len(line)) > lr.limit {
			return nil, &lineTooLong{observed: int64(len(line))}
		}
		return line, nil
	}
	if err != bufio.ErrBufferFull {
		if len(line) > 0 {
			if int64(len(line)) > lr.limit {
				return nil, &lineTooLong{observed: int64(len(line))}
			}
			if err == io.EOF {
				return nil, errPartialLine
			}
		}
		return nil, err
	}
	// A long line: collect chunk copies until the newline, the limit or
	// the end.
	defer lr.release()
	total := int64(0)
	for {
		n := int64(len(line))
		done := err == nil
		if done {
			n-- // the newline
		}
		total += n
		if total > lr.limit {
			return nil, &lineTooLong{observed: total}
		}
		if done {
			out := make([]byte, 0, total)
			for _, c := range lr.chunks {
				out = append(out, c...)
			}
			return append(out, line[:n]...), nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF {
				return nil, errPartialLine
			}
			return nil, err
		}
		lr.chunks = append(lr.chunks, append([]byte(nil), line...))
		line, err = lr.br.ReadSlice('\n')
	}
}

// buffered is the number of bytes read from the pipe and not yet returned.
func (lr *lineReader) buffered() int { return lr.br.Buffered() }

func (lr *lineReader) release() {
	clear(lr.chunks)
	lr.chunks = lr.chunks[:0]
}
