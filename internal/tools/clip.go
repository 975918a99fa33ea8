package tools

import (
	"unicode/utf8"

	"github.com/odekrun/odek/internal/clip"
)

// Clip shortens s to at most max bytes by keeping its head and tail and
// replacing the middle with "\n[... N bytes omitted ...]\n" (see
// clip.Text, which the agent loop uses for every tool result). Pure.
func Clip(s string, max int) string { return clip.Text(s, max) }

// runeStartBefore returns the largest i <= n at which no valid UTF-8
// sequence of s is split.
func runeStartBefore(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for k := 0; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); k++ {
		n--
	}
	return n
}

// runeStartAfter returns the smallest i >= n at which no valid UTF-8
// sequence of s is split.
func runeStartAfter(s string, n int) int {
	for k := 0; k < utf8.UTFMax && n < len(s) && !utf8.RuneStart(s[n]); k++ {
		n++
	}
	return n
}
