package redact

// maxNameBytes bounds the part of a name that IsSecretName and the
// key/value detector look at: only the last maxNameBytes bytes count. The
// bound keeps the detector's look-behind finite, which streaming needs.
const maxNameBytes = 64

// tokenCountSuffixes follow TOKEN in names that count tokens rather than
// hold one: MAX_TOKENS, TOKENIZER, TOKEN_COUNT, TOKEN_LIMIT, TOKEN_USAGE,
// TOKEN_BUDGET. Model configuration and usage reports are full of them.
var tokenCountSuffixes = [...]string{"S", "IZ", "COUNT", "LIMIT", "USAGE", "BUDGET"}

// IsSecretName reports whether a variable, header or field name looks like
// it holds a secret. The name is compared case-insensitively after removing
// the separators '_', '-', '.' and ' ', so "OPENAI_API_KEY", "x-api-key",
// "apiKey", "apikey" and "Api Key" all match. It matches when the name
// contains API_KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL,
// PRIVATE_KEY, ACCESS_KEY, PASSPHRASE, COOKIE or AUTHORIZATION, except that
// TOKEN directly followed by S, IZ, COUNT, LIMIT, USAGE or BUDGET (max_tokens,
// tokenizer, token_count) is a count, not a credential. Only the last 64
// bytes of a longer name are considered.
func IsSecretName(name string) bool {
	if len(name) > maxNameBytes {
		name = name[len(name)-maxNameBytes:]
	}
	var buf [maxNameBytes]byte
	return secretWords(fold(buf[:0], name), false)
}

// IsSecretEnvName is the stricter test for the names of environment
// variables odek would hand to another process (an MCP server): the whole
// name counts, and TOKEN always marks a secret, counting names such as
// MAX_TOKENS included — a name stripped wrongly costs a server a setting,
// one passed wrongly leaks a credential.
func IsSecretEnvName(name string) bool {
	return secretWords(fold(make([]byte, 0, len(name)), name), true)
}

// fold appends name to c upper-cased, without '_', '-', '.' and ' '.
func fold(c []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case b == '_' || b == '-' || b == '.' || b == ' ':
			continue
		case 'a' <= b && b <= 'z':
			b -= 'a' - 'A'
		}
		c = append(c, b)
	}
	return c
}

// secretWords reports whether the folded name c contains a secret's
// keyword; strict counts TOKEN even when it counts tokens.
func secretWords(c []byte, strict bool) bool {
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case 'A':
			if hasWordAt(c, i, "APIKEY") || hasWordAt(c, i, "ACCESSKEY") || hasWordAt(c, i, "AUTHORIZATION") {
				return true
			}
		case 'T':
			if hasWordAt(c, i, "TOKEN") && (strict || !countingToken(c[i+len("TOKEN"):])) {
				return true
			}
		case 'S':
			if hasWordAt(c, i, "SECRET") {
				return true
			}
		case 'P':
			if hasWordAt(c, i, "PASSWORD") || hasWordAt(c, i, "PASSWD") ||
				hasWordAt(c, i, "PRIVATEKEY") || hasWordAt(c, i, "PASSPHRASE") {
				return true
			}
		case 'C':
			if hasWordAt(c, i, "CREDENTIAL") || hasWordAt(c, i, "COOKIE") {
				return true
			}
		}
	}
	return false
}

func hasWordAt(c []byte, i int, w string) bool {
	return len(c)-i >= len(w) && string(c[i:i+len(w)]) == w
}

func countingToken(rest []byte) bool {
	for _, s := range tokenCountSuffixes {
		if hasWordAt(rest, 0, s) {
			return true
		}
	}
	return false
}

// isLineValueName reports whether the value of a header-like field with
// this name runs to the end of the line ("Authorization: Bearer x",
// "Cookie: a=1; b=2") instead of ending at the first space or separator.
func isLineValueName(name string) bool {
	if len(name) > maxNameBytes {
		name = name[len(name)-maxNameBytes:]
	}
	return containsFold(name, "authorization") || containsFold(name, "cookie")
}

// containsFold reports whether s contains the lower-case ASCII word w,
// ignoring ASCII case in s.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if hasPrefixFold(s[i:], w) {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether s starts with the lower-case ASCII word w,
// ignoring ASCII case in s.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != w[i] {
			return false
		}
	}
	return true
}
