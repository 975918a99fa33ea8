package redact

import (
	"slices"
	"strings"
)

// Detection model
//
// Every detector reports spans: half-open byte ranges to replace with
// Marker. A span's existence and extent depend only on the text from a
// bounded distance before it (at most lookBehind bytes) up to the byte that
// ends it. Detectors report every qualifying candidate, overlapping or not;
// writeRedacted merges overlapping and touching spans. That makes detection
// restartable at any offset that no span crosses or ends at, which is what
// Stream relies on: it keeps lookBehind bytes of already emitted text as
// context, and each detector says, through hold, from which offset on its
// result could still change when more text arrives.
//
// Idempotence rests on three rules. Decisions that depend on how long a
// run is (minimum lengths, "contains a digit") only get easier to meet as
// the run grows, and a Marker ends every run, so a second pass sees runs
// no longer than the first did. Registered values are registered without
// any part that could overlap a Marker (see markerFree). And a value that
// runs into a Marker is left alone (see atMarker).
//
// Patterns (the span is the part in brackets):
//
//	[sk-…]                  OpenAI (sk-…, sk-proj-…) and Anthropic (sk-ant-…)
//	                        keys: ≥ 20 of [A-Za-z0-9_-] with a digit, an upper-
//	                        and a lower-case letter
//	[ghp_…] [gho_…] [ghu_…] GitHub tokens: ≥ 36 of [A-Za-z0-9]
//	[ghs_…] [ghr_…]
//	[github_pat_…]          GitHub fine-grained tokens: ≥ 22 of [A-Za-z0-9_]
//	[xoxa-…] [xoxb-…] …     Slack tokens xox[abprs]-: ≥ 10 of [A-Za-z0-9-], a digit
//	[AKIA…]                 AWS access key ids: ≥ 16 of [0-9A-Z]
//	[AIza…]                 Google API keys: ≥ 35 of [A-Za-z0-9_-]
//	[123456:…]              Telegram bot tokens: ≥ 6 digits, ':', ≥ 35 of
//	                        [A-Za-z0-9_-] (at most the last 20 digits are masked)
//	Bearer [token]          ≥ 8 of [A-Za-z0-9._~+/=-] with a digit, after
//	                        "bearer" in any case and 1–16 blanks
//	[-----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----]
//	                        the whole block; without an END line, up to the
//	                        first byte that cannot be part of a PEM body
//	scheme://user:[password]@host
//	name=[value] name: [value] "name": "[value]"
//	                        when IsSecretName(name); this also covers AWS
//	                        secret access keys, which are only recognisable
//	                        by their label (aws_secret_access_key = …); see
//	                        keyValueAt
//
// A prefix pattern's span runs to the end of the [A-Za-z0-9_-] run that
// holds it, so a masked key never leaves a tail behind.

// lookBehind bounds how far before a span's start a detector looks. Stream
// keeps this much emitted text as context.
const lookBehind = 256

// span is a half-open byte range [s, e) of the text to replace by Marker.
type span struct{ s, e int }

// scan is one detection pass over b.
type scan struct {
	b string
	// from: spans starting before from belong to text already emitted and
	// are not reported; b[:from] is look-behind context.
	from int
	// atEOF: b is the whole rest of the text. When false, more may follow.
	atEOF bool
	// pending is the smallest offset ≥ from at which a span may start whose
	// existence or extent depends on bytes after b; len(b) when none.
	pending int
	// spans stays nil on clean text, so a scan costs no allocation.
	spans []span
}

func (sc *scan) init(b string, from int, atEOF bool) {
	sc.b, sc.from, sc.atEOF, sc.pending = b, from, atEOF, len(b)
}

// add reports the span [s, e).
func (sc *scan) add(s, e int) {
	if s >= sc.from && e > s {
		sc.spans = append(sc.spans, span{s, e})
	}
}

// hold reports that a span starting at s may exist or grow once more text
// arrives. It is a no-op at the end of the text.
func (sc *scan) hold(s int) {
	if sc.atEOF {
		return
	}
	s = max(s, sc.from)
	if s < sc.pending {
		sc.pending = s
	}
}

// holdPartial holds the start of any suffix of b (from sc.from on) that is
// a proper prefix of lit, which could become lit with more text.
func (sc *scan) holdPartial(lit string) {
	if sc.atEOF {
		return
	}
	n := len(sc.b)
	for k := min(len(lit)-1, n-sc.from); k > 0; k-- {
		if sc.b[n-k:] == lit[:k] {
			sc.hold(n - k)
			return
		}
	}
}

// detect runs every detector over sc.
func (r *Redactor) detect(sc *scan) {
	if r != nil {
		if vs := r.vals.Load(); vs != nil {
			vs.scan(sc)
		}
	}
	detectPrefixed(sc)
	detectSeparators(sc)
	detectBearer(sc)
	detectPEM(sc)
}

// byteClass is a set of bytes.
type byteClass [256]bool

// classOf builds a byteClass from strings of member bytes; a three-byte
// string "x-y" stands for the range x to y.
func classOf(ranges ...string) *byteClass {
	var c byteClass
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for b := int(r[0]); b <= int(r[2]); b++ {
				c[b] = true
			}
			continue
		}
		for i := 0; i < len(r); i++ {
			c[r[i]] = true
		}
	}
	return &c
}

var (
	tokenChars   = classOf("a-z", "A-Z", "0-9", "_-")
	alnum        = classOf("a-z", "A-Z", "0-9")
	alnumUnder   = classOf("a-z", "A-Z", "0-9", "_")
	alnumDash    = classOf("a-z", "A-Z", "0-9", "-")
	upperDigit   = classOf("A-Z", "0-9")
	digits       = classOf("0-9")
	bearerChars  = classOf("a-z", "A-Z", "0-9", "._~+/=-")
	keyChars     = classOf("a-z", "A-Z", "0-9", "_.-")
	quotedKey    = classOf("a-z", "A-Z", "0-9", "_.- ")
	pemLabel     = classOf("A-Z", "0-9", " ")
	pemBody      = classOf("a-z", "A-Z", "0-9", "+/=", " \t\r\n\\:,-.")
	blank        = classOf(" \t")
	valueEnd     = classOf(" \t\r\n\v\f", "\"'`,;&<>(){}")
	arrayOpener  = classOf(" \t\r\n\"'[]{")
	userinfoStop = classOf(" \t\r\n\v\f", "/?#\"'<>[]\\")
)

// runEnd returns the end of the run of class bytes in b starting at i.
func runEnd(b string, i int, c *byteClass) int {
	for i < len(b) && c[b[i]] {
		i++
	}
	return i
}

// prefixRule is one provider key format: a literal prefix followed by at
// least minBody bytes of body. The search looks for the prefix's rarest
// byte, prefix[anchor], with strings.IndexByte; searching for the whole
// prefix would stop at every 's' or 'g' of ordinary text.
type prefixRule struct {
	prefix  string
	anchor  int
	body    *byteClass
	minBody int
	// digit, mixedCase: the token run must contain a digit / both an upper-
	// and a lower-case letter. They keep words such as "task-force-…" from
	// matching "sk-".
	digit, mixedCase bool
}

var prefixRules = [...]prefixRule{
	{prefix: "sk-", anchor: 1, body: tokenChars, minBody: 20, digit: true, mixedCase: true},
	{prefix: "ghp_", anchor: 3, body: alnum, minBody: 36},
	{prefix: "gho_", anchor: 3, body: alnum, minBody: 36},
	{prefix: "ghu_", anchor: 3, body: alnum, minBody: 36},
	{prefix: "ghs_", anchor: 3, body: alnum, minBody: 36},
	{prefix: "ghr_", anchor: 3, body: alnum, minBody: 36},
	{prefix: "github_pat_", anchor: 6, body: alnumUnder, minBody: 22},
	{prefix: "xoxa-", anchor: 0, body: alnumDash, minBody: 10, digit: true},
	{prefix: "xoxb-", anchor: 0, body: alnumDash, minBody: 10, digit: true},
	{prefix: "xoxp-", anchor: 0, body: alnumDash, minBody: 10, digit: true},
	{prefix: "xoxr-", anchor: 0, body: alnumDash, minBody: 10, digit: true},
	{prefix: "xoxs-", anchor: 0, body: alnumDash, minBody: 10, digit: true},
	{prefix: "AKIA", anchor: 1, body: upperDigit, minBody: 16},
	{prefix: "AIza", anchor: 2, body: tokenChars, minBody: 35},
}

// prefixAnchors groups prefixRules by anchor byte.
var prefixAnchors = func() []prefixAnchor {
	var out []prefixAnchor
	for i, r := range prefixRules {
		c := r.prefix[r.anchor]
		k := slices.IndexFunc(out, func(a prefixAnchor) bool { return a.c == c })
		if k < 0 {
			out = append(out, prefixAnchor{c: c})
			k = len(out) - 1
		}
		out[k].rules = append(out[k].rules, &prefixRules[i])
	}
	return out
}()

type prefixAnchor struct {
	c     byte
	rules []*prefixRule
}

// detectPrefixed finds provider keys by their prefixes.
func detectPrefixed(sc *scan) {
	b := sc.b
	for _, a := range prefixAnchors {
		for i := sc.from; ; {
			j := strings.IndexByte(b[i:], a.c)
			if j < 0 {
				break
			}
			p := i + j
			i = p + 1
			for _, rule := range a.rules {
				s, last := p-rule.anchor, p-rule.anchor+len(rule.prefix)-1
				// Compare the end bytes first: most anchor hits are ordinary
				// words.
				if s >= sc.from && last < len(b) && b[s] == rule.prefix[0] &&
					b[last] == rule.prefix[len(rule.prefix)-1] && strings.HasPrefix(b[s:], rule.prefix) {
					matchPrefixed(sc, rule, s)
				}
			}
		}
	}
	if !sc.atEOF {
		for k := range prefixRules {
			sc.holdPartial(prefixRules[k].prefix)
		}
	}
}

func matchPrefixed(sc *scan, rule *prefixRule, s int) {
	b := sc.b
	body := s + len(rule.prefix)
	end := runEnd(b, body, tokenChars)
	if end == len(b) && !sc.atEOF {
		sc.hold(s)
		return
	}
	if runEnd(b, body, rule.body)-body < rule.minBody {
		return
	}
	var hasDigit, hasUpper, hasLower bool
	for i := body; i < end; i++ {
		c := b[i]
		hasDigit = hasDigit || '0' <= c && c <= '9'
		hasUpper = hasUpper || 'A' <= c && c <= 'Z'
		hasLower = hasLower || 'a' <= c && c <= 'z'
	}
	if rule.digit && !hasDigit || rule.mixedCase && !(hasUpper && hasLower) {
		return
	}
	sc.add(s, end)
}

// Limits of the separator-based detectors.
const (
	// maxBlanks is the most spaces or tabs allowed on each side of a
	// separator or after "Bearer".
	maxBlanks = 16
	// maxTelegramDigits is the most digits of a Telegram bot id masked.
	maxTelegramDigits = 20
	// maxUserinfo is the longest user:password part of a URL looked at.
	maxUserinfo = 128
	// maxPEMLabel is the longest label of a BEGIN or END line.
	maxPEMLabel = 64
)

// detectSeparators runs the detectors anchored at a separator byte:
// Telegram bot tokens and URL passwords at ':', secret-named key/value
// pairs at ':' and '='. One search serves all three.
func detectSeparators(sc *scan) {
	b := sc.b
	// A pair's value starts at most 2+maxBlanks bytes after its separator;
	// a URL password at most maxUserinfo bytes after its "://".
	const kvReach = 2 + maxBlanks
	for i := max(0, sc.from-(len("://")+maxUserinfo)); ; {
		j := strings.IndexByte(b[i:], ':')
		if j < 0 {
			break
		}
		q := i + j
		i = q + 1
		if strings.HasPrefix(b[q+1:], "//") {
			urlPasswordAt(sc, q+len("://"))
			continue
		}
		if q >= sc.from && q > 0 && digits[b[q-1]] {
			telegramAt(sc, q)
		}
		if q >= sc.from-kvReach {
			keyValueAt(sc, q)
		}
	}
	for i := max(0, sc.from-kvReach); ; {
		j := strings.IndexByte(b[i:], '=')
		if j < 0 {
			break
		}
		q := i + j
		i = q + 1
		keyValueAt(sc, q)
	}
	// Digits at the end may become a bot id once a ':' arrives.
	if !sc.atEOF {
		n := len(b)
		d := n
		for d > 0 && n-d < maxTelegramDigits && digits[b[d-1]] {
			d--
		}
		if d < n {
			sc.hold(d)
		}
	}
}

// telegramAt matches a Telegram bot token whose ':' is at q.
func telegramAt(sc *scan, q int) {
	b := sc.b
	d := q
	for d > 0 && digits[b[d-1]] && q-d < maxTelegramDigits {
		d--
	}
	if q-d < 6 {
		return
	}
	end := runEnd(b, q+1, tokenChars)
	if end == len(b) && !sc.atEOF {
		sc.hold(d)
		return
	}
	if end-(q+1) >= 35 {
		sc.add(d, end)
	}
}

// keyValueAt masks the value of a secret-named pair whose separator is at
// q: name=value, name: value, name := value, name => value, "name":
// "value", with up to maxBlanks blanks around the separator. The name is
// the run of [A-Za-z0-9_.-] before the separator (inside quotes also
// spaces), of which the last 64 bytes count. The value is
//
//   - the contents of a quoted string ('…' or "…", backslash escapes
//     honoured), up to the end of the line if the quote is not closed;
//   - for Authorization and Cookie names, the rest of the line or up to a
//     quote;
//   - else the run of bytes up to white space, one of "'`,;&<>(){} or a
//     Marker.
//
// Values that open an object or array ({…, ["…) are left alone; their
// members have names of their own.
func keyValueAt(sc *scan, q int) {
	b := sc.b
	n := len(b)
	sep := q + 1
	switch b[q] {
	case ':':
		if sep < n && b[sep] == '=' {
			sep++ // :=
		} else if sep < n && b[sep] == '/' {
			if sep+1 < n && b[sep+1] == '/' {
				return // scheme://
			}
			if sep+1 == n && !sc.atEOF {
				sc.hold(sep) // ":/" may become "://"
				return
			}
		}
	case '=':
		if sep < n && b[sep] == '=' {
			return // ==
		}
		if sep < n && b[sep] == '>' {
			sep++ // =>
		}
	}
	// The name.
	k := q
	for i := 0; k > 0 && blank[b[k-1]] && i < maxBlanks; i++ {
		k--
	}
	class := keyChars
	if k > 0 && (b[k-1] == '"' || b[k-1] == '\'') {
		k--
		class = quotedKey
	}
	nameEnd := k
	var letters uint32 // which letters (folded to lower case) the name holds
	for k > 0 && class[b[k-1]] && nameEnd-k < maxNameBytes {
		k--
		letters |= 1 << (((b[k] | 0x20) - 'a') & 31)
	}
	if letters&maybeSecret == 0 && letters&bitsCR != bitsCR && letters&bitsPH != bitsPH {
		return // cheap rejection of most names; see maybeSecret
	}
	if k == nameEnd || !IsSecretName(b[k:nameEnd]) {
		return
	}
	// The value.
	v := sep
	for i := 0; v < n && blank[b[v]]; i++ {
		if i == maxBlanks {
			return
		}
		v++
	}
	if v == n {
		return // a value, if any, starts after this text
	}
	switch c := b[v]; {
	case c == '"' || c == '\'':
		quotedValue(sc, v)
	case isLineValueName(b[k:nameEnd]):
		// 'Authorization: Bearer …' in a shell command ends at the quote.
		end := v
		for end < n && b[end] != '\n' && b[end] != '\r' && b[end] != '"' && b[end] != '\'' && !atMarker(b, end) {
			end++
		}
		if end == n && !sc.atEOF {
			sc.hold(v)
			return
		}
		sc.add(v, end)
	case c == '{':
		return
	case c == '[' && v+1 == n && !sc.atEOF:
		sc.hold(v)
	case c == '[' && (v+1 == n || arrayOpener[b[v+1]]):
		return
	default:
		end := v
		for end < n && !valueEnd[b[end]] && !atMarker(b, end) {
			end++
		}
		if end == n && !sc.atEOF {
			sc.hold(v)
			return
		}
		if end < n && end > v && atMarker(b, end) {
			return // see atMarker
		}
		if isCodeRef(b[v:end], end < n && b[end] == '(') {
			return
		}
		sc.add(v, end)
	}
}

// atMarker reports whether a Marker starts at b[i]. A Marker ends every
// value, quoted or not, and an unquoted value that runs into one is left
// alone: on a second pass, a Marker that another detector wrote into a
// value this detector skipped must not change its decision. Text that
// already carries a Marker is taken as redacted.
func atMarker(b string, i int) bool {
	return b[i] == '[' && strings.HasPrefix(b[i:], Marker)
}

// Every keyword of IsSecretName contains K, W or Z, or both C and R
// (SECRET, CREDENTIAL), or both P and H (PASSPHRASE). A name without them
// is rejected without normalising it. The bits are set per byte folded to
// lower case, so digits and punctuation set unrelated bits, which only
// lets a few more names through to IsSecretName.
const (
	maybeSecret = 1<<('k'-'a') | 1<<('w'-'a') | 1<<('z'-'a')
	bitsCR      = 1<<('c'-'a') | 1<<('r'-'a')
	bitsPH      = 1<<('p'-'a') | 1<<('h'-'a')
)

// isCodeRef reports whether an unquoted value is source code rather than a
// credential: a dotted path of digit-free identifiers (os.Getenv,
// cfg.APIKey, process.env.API_KEY) or a digit-free identifier being called
// (getToken(). Secret values almost always contain digits; this keeps
// "token := os.Getenv(…)" readable in the source files the model works on.
func isCodeRef(v string, call bool) bool {
	if v == "" {
		return false
	}
	dots := 0
	segStart := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '.':
			if segStart {
				return false
			}
			dots++
			segStart = true
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_', c == '$':
			segStart = false
		default:
			return false
		}
	}
	return !segStart && (dots > 0 || call)
}

// quotedValue masks the contents of the string literal opening at v.
func quotedValue(sc *scan, v int) {
	b := sc.b
	quote := b[v]
	for i := v + 1; i < len(b); i++ {
		switch b[i] {
		case quote, '\n', '\r':
			sc.add(v+1, i)
			return
		case '[':
			if atMarker(b, i) {
				sc.add(v+1, i)
				return
			}
		case '\\':
			i++
		}
	}
	if !sc.atEOF {
		sc.hold(v + 1)
		return
	}
	sc.add(v+1, len(b))
}

// detectBearer masks the token after "Bearer" in any letter case.
func detectBearer(sc *scan) {
	b := sc.b
	// The token starts at most len("bearer")+maxBlanks bytes after the
	// keyword's first byte.
	start := max(0, sc.from-(len("bearer")+maxBlanks))
	for _, c := range [...]byte{'b', 'B'} {
		for i := start; ; {
			j := strings.IndexByte(b[i:], c)
			if j < 0 {
				break
			}
			kw := i + j
			i = kw + 1
			if hasPrefixFold(b[kw:], "bearer") {
				bearerAt(sc, kw+len("bearer"))
			}
		}
	}
}

// bearerAt masks the token after blanks at i, just after "bearer".
func bearerAt(sc *scan, i int) {
	b := sc.b
	v := i
	for v < len(b) && blank[b[v]] && v-i <= maxBlanks {
		v++
	}
	if v == i || v-i > maxBlanks || v == len(b) {
		return // no blank, too many, or the token starts after this text
	}
	end := runEnd(b, v, bearerChars)
	if end == len(b) && !sc.atEOF {
		sc.hold(v)
		return
	}
	if end-v >= 8 && strings.ContainsAny(b[v:end], "0123456789") {
		sc.add(v, end)
	}
}

// urlPasswordAt masks the password of scheme://user:password@host whose
// userinfo starts at u. The password runs from the first ':' of the
// userinfo to its last '@' (people do not always percent-encode an '@' in
// a password).
func urlPasswordAt(sc *scan, u int) {
	b := sc.b
	colon, at := -1, -1
	k := u
	for ; k < len(b) && k-u < maxUserinfo && !userinfoStop[b[k]]; k++ {
		switch {
		case b[k] == '@':
			at = k
		case b[k] == ':' && colon < 0:
			colon = k
		}
	}
	if k == len(b) && k-u < maxUserinfo && colon >= 0 && !sc.atEOF {
		sc.hold(colon + 1) // a later '@' may end the password
		return
	}
	if colon >= 0 && at > colon {
		sc.add(colon+1, at)
	}
}

// detectPEM masks PEM private key blocks, found by the 'B' of BEGIN.
func detectPEM(sc *scan) {
	const begin = "-----BEGIN "
	b := sc.b
	for i := min(len(b), sc.from+len("-----")); ; {
		j := strings.IndexByte(b[i:], 'B')
		if j < 0 {
			break
		}
		s := i + j - len("-----")
		i += j + 1
		if !strings.HasPrefix(b[s:], begin) {
			continue
		}
		// Header: label then "-----"; the label names a private key.
		l := s + len(begin)
		le := l
		for le < len(b) && pemLabel[b[le]] && le-l <= maxPEMLabel {
			le++
		}
		if le == len(b) || (len(b)-le < len("-----") && strings.HasPrefix("-----", b[le:])) {
			sc.hold(s) // the header is not complete yet
			continue
		}
		if le-l > maxPEMLabel || !strings.HasPrefix(b[le:], "-----") ||
			!strings.Contains(b[l:le], "PRIVATE KEY") {
			continue
		}
		if end, ok := pemEnd(sc, le+len("-----")); ok {
			sc.add(s, end)
		} else {
			sc.hold(s)
		}
	}
	sc.holdPartial(begin)
}

// pemEnd returns the end of a PEM body starting at i: just after the END
// line, or at the first byte that cannot be part of a body. ok is false
// when that depends on text not seen yet.
func pemEnd(sc *scan, i int) (end int, ok bool) {
	const endLine = "-----END "
	b := sc.b
	for ; i < len(b); i++ {
		c := b[i]
		if !pemBody[c] {
			return i, true
		}
		if c != '-' {
			continue
		}
		rest := b[i:]
		if len(rest) < len(endLine) {
			if strings.HasPrefix(endLine, rest) && !sc.atEOF {
				return 0, false
			}
			continue
		}
		if !strings.HasPrefix(rest, endLine) {
			continue
		}
		l := i + len(endLine)
		le := l
		for le < len(b) && pemLabel[b[le]] && le-l <= maxPEMLabel {
			le++
		}
		if le-l > maxPEMLabel {
			continue
		}
		if strings.HasPrefix(b[le:], "-----") {
			return le + len("-----"), true
		}
		if strings.HasPrefix("-----", b[le:]) && !sc.atEOF {
			return 0, false
		}
	}
	if sc.atEOF {
		return len(b), true
	}
	return 0, false
}
