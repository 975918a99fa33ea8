package bot

import (
	"time"

	"github.com/odekrun/odek/bot/tgformat"
)

// The formatting lives in bot/tgformat; these names are the bot's
// public formatting API, kept for its callers.

// MaxMessageLen is Telegram's limit on one message's text.
const MaxMessageLen = tgformat.MaxMessageLen

// Chunk is one message of a reply: HTML and the same text plain.
type Chunk = tgformat.Chunk

// Reply is a job's outcome as one message.
type Reply = tgformat.Reply

// Artifact is what a reply shows of one artifact of a job.
type Artifact = tgformat.Artifact

// FormatAnswer renders a Markdown answer as Telegram HTML chunks.
func FormatAnswer(answer string, limit int) []Chunk { return tgformat.Answer(answer, limit) }

// FormatReply renders a reply as chunks within limit.
func FormatReply(r Reply, limit int) []Chunk { return tgformat.FormatReply(r, limit) }

// ArtifactLine renders one artifact as a single line.
func ArtifactLine(a Artifact) (html, plain string) { return tgformat.ArtifactLine(a) }

// Footer renders the usage line of a reply.
func Footer(promptTokens, completionTokens int64, costUSD float64, d time.Duration) string {
	return tgformat.Footer(promptTokens, completionTokens, costUSD, d)
}

// TextLen is the length of s as Telegram counts it (UTF-16 code units).
func TextLen(s string) int { return tgformat.TextLen(s) }

// HumanBytes renders a size: "512 B", "12.3 KiB".
func HumanBytes(n int64) string { return tgformat.HumanBytes(n) }

// Thousands renders n with "," between groups of three digits.
func Thousands(n int64) string { return tgformat.Thousands(n) }

// Seconds renders a duration as "0.4 s", "12 s" or "3 min 5 s".
func Seconds(d time.Duration) string { return tgformat.Seconds(d) }

func oneLine(s string, max int) string { return tgformat.OneLine(s, max) }

func cleanText(s string) string { return tgformat.CleanText(s) }
