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
