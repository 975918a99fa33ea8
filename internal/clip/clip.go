// Package clip shortens text for a model: head and tail kept, the middle
// replaced by a marker naming the bytes left out. Pure and safe for
// concurrent use; the agent loop and the built-in tools share it.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// minClipMarker is the smallest max for which Text keeps a head, a marker
// and a tail; below it Text returns a plain prefix.
const minClipMarker = 64

// Text shortens s to at most max bytes by keeping its head and tail and
// replacing the middle with "\n[... N bytes omitted ...]\n", where N counts
// the removed bytes. It never splits a UTF-8 sequence, so the result may
// be a few bytes shorter than max. For max >= 64, len(Text(s, max)) <= max;
// for smaller max Text returns the longest prefix of at most max bytes that
// ends on a rune boundary, without a marker; for max <= 0 it returns "".
func Text(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	if max < minClipMarker {
		return s[:RuneStartBefore(s, max)]
	}
	// Size the marker for the largest possible count; the real count is
	// no larger, so the result fits.
	budget := max - len(clipMarker(len(s)))
	head := RuneStartBefore(s, budget/2)
	tail := RuneStartAfter(s, len(s)-(budget-budget/2))
	return s[:head] + clipMarker(tail-head) + s[tail:]
}

func clipMarker(omitted int) string {
	return "\n[... " + strconv.Itoa(omitted) + " bytes omitted ...]\n"
}

// RuneStartBefore returns the largest i <= n at which no valid UTF-8
// sequence of s is split.
func RuneStartBefore(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for k := 0; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); k++ {
		n--
	}
	return n
}

// RuneStartAfter returns the smallest i >= n at which no valid UTF-8
// sequence of s is split.
func RuneStartAfter(s string, n int) int {
	for k := 0; k < utf8.UTFMax && n < len(s) && !utf8.RuneStart(s[n]); k++ {
		n++
	}
	return n
}
