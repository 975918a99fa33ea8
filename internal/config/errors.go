package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every error returned by this package wraps one of them,
// so callers match with errors.Is; *Error carries the details.
var (
	// ErrSyntax: a configuration file is not a well-formed JSON object.
	ErrSyntax = errors.New("config: malformed JSON")
	// ErrInvalid: a setting has the wrong type or an out-of-range value, or
	// a file cannot be used (not a regular file, too large, unreadable).
	ErrInvalid = errors.New("config: invalid setting")
	// ErrNoHome: neither ODEK_HOME nor a user home directory is known.
	ErrNoHome = errors.New("config: cannot determine odek home directory")
	// ErrNoEndpoint: no API key, no base URL and no local server answered.
	ErrNoEndpoint = errors.New("config: no LLM endpoint configured")
	// ErrAPIKeyRequired: the base URL is not a loopback address and no API
	// key is configured.
	ErrAPIKeyRequired = errors.New("config: API key required")
	// ErrExists: WriteStarter refused to overwrite an existing file.
	ErrExists = errors.New("config: file already exists")
)

// Error describes one invalid configuration input. Source names where the
// input came from: a file path, "environment variable ODEK_BASE_URL" or
// "flags". Field is the dotted JSON key ("llm.max_attempts"); empty for
// errors about a whole file. Line and Column are 1-based positions in the
// file, 0 when unknown. Reason never contains secret values.
type Error struct {
	Source string
	Field  string
	Line   int
	Column int
	Reason string
	// Err is ErrSyntax or ErrInvalid.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	b.WriteString(e.Source)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the sentinel (ErrSyntax or ErrInvalid).
func (e *Error) Unwrap() error { return e.Err }

// Warning is a non-fatal finding of Load: an ignored project setting, a
// config file with loose permissions, an API key that would travel over
// plain HTTP. Source is a file path, "environment" or "flags"; Field is the
// dotted JSON key or empty. Messages never contain secret values.
type Warning struct {
	Source  string
	Field   string
	Message string
}

func (w Warning) String() string {
	if w.Field == "" {
		return "config: " + w.Source + ": " + w.Message
	}
	return fmt.Sprintf("config: %s: field %q: %s", w.Source, w.Field, w.Message)
}

func invalidf(source, field, format string, args ...any) *Error {
	return &Error{Source: source, Field: field, Reason: fmt.Sprintf(format, args...), Err: ErrInvalid}
}
