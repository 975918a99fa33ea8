package tools

import "github.com/odekrun/odek/internal/clip"

// Clip shortens s to at most max bytes by keeping its head and tail and
// replacing the middle with "\n[... N bytes omitted ...]\n" (see
// clip.Text, which the agent loop uses for every tool result). Pure.
func Clip(s string, max int) string { return clip.Text(s, max) }
