package artifacts

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// MaxURIBytes bounds the length of an artifact ref's uri. Linux paths are
// at most 4096 bytes; this leaves room for percent-encoding every byte.
const MaxURIBytes = 3*4096 + len("file://localhost")

// ParseFileURI returns the absolute, clean local path named by a file://
// URI, or an error wrapping ErrBadURI. It is a pure function (no file
// system access). Accepted: scheme "file" (any case), host empty or
// "localhost" (any case), no query or fragment, percent escapes of two hex
// digits, no control character (raw or escaped), no escaped '/' (%2F), and
// a decoded path that is absolute and already clean: no "." or ".."
// segment, no empty segment ("//"), no trailing '/'.
func ParseFileURI(uri string) (string, error) {
	if len(uri) > MaxURIBytes {
		return "", fmt.Errorf("%w: %d bytes, limit %d", ErrBadURI, len(uri), MaxURIBytes)
	}
	const scheme = "file://"
	if len(uri) < len(scheme) || !strings.EqualFold(uri[:len(scheme)], scheme) {
		return "", fmt.Errorf("%w: scheme must be file://", ErrBadURI)
	}
	rest := uri[len(scheme):]
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return "", fmt.Errorf("%w: no path after the host", ErrBadURI)
	}
	if host := rest[:slash]; host != "" && !strings.EqualFold(host, "localhost") {
		return "", fmt.Errorf("%w: host %q is not local (only empty or localhost)", ErrBadURI, clip(sanitizeLine(host), 64))
	}
	raw := rest[slash:]
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return "", fmt.Errorf("%w: query or fragment (%q) not allowed", ErrBadURI, raw[i])
	}
	decoded, err := percentDecode(raw)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(decoded, "/") {
		return "", fmt.Errorf("%w: path is not absolute", ErrBadURI)
	}
	for seg := range strings.SplitSeq(decoded[1:], "/") {
		switch seg {
		case "..":
			return "", fmt.Errorf("%w: path contains a '..' segment", ErrBadURI)
		case ".":
			return "", fmt.Errorf("%w: path contains a '.' segment", ErrBadURI)
		case "":
			if decoded != "/" {
				return "", fmt.Errorf("%w: path has an empty segment or a trailing '/'", ErrBadURI)
			}
		}
	}
	if path.Clean(decoded) != decoded {
		// Unreachable after the segment checks; kept as a backstop.
		return "", fmt.Errorf("%w: path is not clean", ErrBadURI)
	}
	return filepath.FromSlash(decoded), nil
}

// percentDecode decodes %XX escapes, refusing malformed escapes, control
// characters (raw or decoded, including NUL) and an escaped '/'.
func percentDecode(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		for i := 0; i < len(s); i++ {
			if isCtl(s[i]) {
				return "", fmt.Errorf("%w: control character 0x%02x in path", ErrBadURI, s[i])
			}
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", fmt.Errorf("%w: malformed percent escape", ErrBadURI)
			}
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
			if c == '/' {
				return "", fmt.Errorf("%w: escaped '/' (%%2F) in path", ErrBadURI)
			}
		}
		if isCtl(c) {
			return "", fmt.Errorf("%w: control character 0x%02x in path", ErrBadURI, c)
		}
		b = append(b, c)
	}
	return string(b), nil
}

func isCtl(c byte) bool { return c < 0x20 || c == 0x7f }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// within reports whether p is root or lies below it. Both must be clean
// absolute paths. A component boundary is required, so /data2 is not within
// /data.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return len(p) > len(root) && strings.HasPrefix(p, root) && p[len(root)] == filepath.Separator
}
