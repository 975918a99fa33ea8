package mcpauth

import (
	"fmt"
	"io"
	"net/url"
	"strings"
)

func readAllLimit(r io.Reader, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("request body larger than %d bytes", n)
	}
	return b, nil
}

func formHas(form, key string) bool {
	v, err := url.ParseQuery(form)
	return err == nil && v.Has(key)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

// escapeHTML escapes the five characters html.EscapeString does (<, >, &,
// ' and "), for the one error line the login callback page shows. Not the
// html package: its initialisation (an escaper and the entity tables'
// lazy builders) runs at the start of every odek process, and this line
// is its only use.
func escapeHTML(s string) string {
	if !strings.ContainsAny(s, "<>&'\"") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\'':
			b.WriteString("&#39;")
		case '"':
			b.WriteString("&#34;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
