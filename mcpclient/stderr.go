package mcpclient

import (
	"bufio"
	"io"
	"time"
	"unicode/utf8"
)

// Stderr drain limits.
const (
	// MaxStderrLineBytes is the longest stderr line logged; the rest of a
	// longer line is read and discarded.
	MaxStderrLineBytes = 4096
	// stderrRate and stderrBurst bound logged stderr lines per second; the
	// rest are read and counted, so a flood never blocks the server nor
	// floods odek's log.
	stderrRate  = 100
	stderrBurst = 200
)

// drainStderr reads the server's stderr line by line until it ends and
// logs each line (sanitised, capped, rate limited) at info level. It never
// parses it.
func (c *conn) drainStderr(r io.Reader) {
	defer c.wg.Done()
	br := bufio.NewReaderSize(r, MaxStderrLineBytes)
	log := c.log.WithField("stream", "stderr")
	tokens := float64(stderrBurst)
	last := time.Now()
	suppressed := 0
	for {
		line, err := br.ReadSlice('\n')
		if len(line) == 0 && err != nil {
			break
		}
		cut := err == bufio.ErrBufferFull
		if cut {
			// Discard the rest of an over-long line.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
		}
		c.stats.stderrLines.Add(1)
		now := time.Now()
		tokens = min(float64(stderrBurst), tokens+now.Sub(last).Seconds()*stderrRate)
		last = now
		if tokens < 1 {
			suppressed++
		} else {
			tokens--
			if suppressed > 0 {
				log.WithField("suppressed_lines", suppressed).Warn("server stderr flood: lines not logged")
				suppressed = 0
			}
			text := sanitizeLogLine(line)
			if cut {
				log.WithField("truncated", true).Info(text)
			} else {
				log.Info(text)
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	if suppressed > 0 {
		log.WithField("suppressed_lines", suppressed).Warn("server stderr flood: lines not logged")
	}
}

// sanitizeLogLine drops the line ending, control characters (ANSI escape
// sequences lose their ESC) and invalid UTF-8.
func sanitizeLogLine(b []byte) string {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n == 1:
		case r < 0x20 && r != '\t', r == 0x7f, r >= 0x80 && r < 0xa0, r == 0x2028, r == 0x2029:
		default:
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}
