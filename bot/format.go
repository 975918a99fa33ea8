package bot

import "github.com/odekrun/odek/bot/tgformat"

// Formatting lives in bot/tgformat; the shell calls it by its own names.

func oneLine(s string, max int) string { return tgformat.OneLine(s, max) }

func cleanText(s string) string { return tgformat.CleanText(s) }
