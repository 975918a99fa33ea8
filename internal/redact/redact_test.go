package redact

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestPatterns(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// Provider keys.
		{"openai", "key sk-AbCdEf1234567890abcdefGHIJKLmnop done", "key [REDACTED] done"},
		{"openai project", "sk-proj-AbCdEf1234567890abcdefGHIJ", "[REDACTED]"},
		{"anthropic", `"sk-ant-api03-AbCdEf1234567890abcdef_GHIJ-KLmn"`, `"[REDACTED]"`},
		{"sk prefix inside a word", "mask-AbCdEf1234567890abcdefGHIJ", "ma[REDACTED]"},
		{"sk slug without mixed case", "the task-force-for-all-things-1234 here", "the task-force-for-all-things-1234 here"},
		{"sk too short", "sk-Ab1", "sk-Ab1"},
		{"github classic", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]"},
		{"github oauth", "x gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.", "x [REDACTED]."},
		{"github user server refresh", "ghu_abcdefghijklmnopqrstuvwxyz0123456789 ghs_abcdefghijklmnopqrstuvwxyz0123456789 ghr_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED] [REDACTED] [REDACTED]"},
		{"github short", "ghp_short", "ghp_short"},
		{"github in English", "the light is high", "the light is high"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopq", "[REDACTED]"},
		{"slack bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl", "[REDACTED]"},
		{"slack user", "(xoxp-1234567890-abcdef)", "([REDACTED])"},
		{"slack no digit", "xoxa-abcdefghijkl", "xoxa-abcdefghijkl"},
		{"aws access key id", "id=AKIAIOSFODNN7EXAMPLE,", "id=[REDACTED],"},
		{"aws id with lower-case tail is masked whole", "AKIAIOSFODNN7EXAMPLExyz", "[REDACTED]"},
		{"aws too short", "AKIA1234", "AKIA1234"},
		{"aws secret labelled", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"},
		{"google", "AIzaSyA-1234567890abcdefghijklmnopqrstu&x", "[REDACTED]&x"},
		{"telegram", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 ok", "bot [REDACTED] ok"},
		{"telegram keeps long digit head", "1234567890123456789012345:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "12345[REDACTED]"},
		{"telegram few digits", "12345:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "12345:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"},
		{"clock times", "at 12:30:45 and 2024-01-01T10:00:00Z", "at 12:30:45 and 2024-01-01T10:00:00Z"},
		// Bearer and headers.
		{"bearer", "Bearer abc.def-123", "Bearer [REDACTED]"},
		{"bearer upper and tab", "BEARER\teyJhbGciOiJIUzI1NiJ9.e30.sig", "BEARER\t[REDACTED]"},
		{"bearer prose", "the bearer of this letter", "the bearer of this letter"},
		{"bearer short token", "Bearer ab1", "Bearer ab1"},
		{"authorization header to end of line", "Authorization: Basic dXNlcjpwYXNz\nHost: x", "Authorization: [REDACTED]\nHost: x"},
		{"authorization in quotes ends at quote", "curl -H 'Authorization: token abc123' https://x", "curl -H 'Authorization: [REDACTED]' https://x"},
		{"cookie header", "Cookie: a=1; session=xyz\r\n", "Cookie: [REDACTED]\r\n"},
		{"proxy authorization", "proxy-authorization: Basic dXNlcjpwYXNz", "proxy-authorization: [REDACTED]"},
		{"value running into a marker is left alone", "password=abc[REDACTED]", "password=abc[REDACTED]"},
		{"quoted value stops at a marker", `"password": "abc[REDACTED]def"`, `"password": "[REDACTED][REDACTED]def"`},
		// PEM.
		{"pem block", "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc+/=\nxyz\n-----END RSA PRIVATE KEY-----\nafter", "x\n[REDACTED]\nafter"},
		{"pem escaped in JSON", `{"k":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n"}`, `{"k":"[REDACTED]\n"}`},
		{"pem encrypted headers", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,AB\n\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----", "[REDACTED]"},
		{"pem unterminated", "-----BEGIN PRIVATE KEY-----\nMIIEabc\nxyz", "[REDACTED]"},
		{"pem unterminated stops at foreign byte", "-----BEGIN PRIVATE KEY-----\nMIIE\"}", "[REDACTED]\"}"},
		{"pem public key untouched", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"},
		{"pem certificate untouched", "-----BEGIN CERTIFICATE-----\nMIIB", "-----BEGIN CERTIFICATE-----\nMIIB"},
		// URLs.
		{"url password", "postgres://admin:s3cr3t@db:5432/app", "postgres://admin:[REDACTED]@db:5432/app"},
		{"url password with @", "https://u:p@ss@host/x", "https://u:[REDACTED]@host/x"},
		{"url port only", "https://example.com:8443/path?a=b@c", "https://example.com:8443/path?a=b@c"},
		{"url user only", "ssh://git@github.com/x", "ssh://git@github.com/x"},
		{"url ipv6", "http://[::1]:80/", "http://[::1]:80/"},
		// Secret-named pairs.
		{"env", "export API_KEY=abc123 next", "export API_KEY=[REDACTED] next"},
		{"env quoted", `PASSWORD="two words" X=1`, `PASSWORD="[REDACTED]" X=1`},
		{"yaml", "db:\n  password: hunter2\n  user: bob", "db:\n  password: [REDACTED]\n  user: bob"},
		{"json string", `{"api_key": "abc def", "user": "bob"}`, `{"api_key": "[REDACTED]", "user": "bob"}`},
		{"json escaped quote", `{"password":"x\"y","n":1}`, `{"password":"[REDACTED]","n":1}`},
		{"json number", `{"token": 123456, "n": 1}`, `{"token": [REDACTED], "n": 1}`},
		{"json quoted name with space", `{"API Key": "abc"}`, `{"API Key": "[REDACTED]"}`},
		{"json array left alone", `{"tokens_list": ["a", "b"]}`, `{"tokens_list": ["a", "b"]}`},
		{"json object left alone", `{"secret": {"id": 1}}`, `{"secret": {"id": 1}}`},
		{"value starting with bracket", "password=[abc]", "password=[REDACTED]"},
		{"go short decl literal", `token := "abc123"`, `token := "[REDACTED]"`},
		{"go code ref", `token := os.Getenv("X")`, `token := os.Getenv("X")`},
		{"js code ref", "apiKey: process.env.API_KEY,", "apiKey: process.env.API_KEY,"},
		{"call", "secret = loadSecret()", "secret = loadSecret()"},
		{"comparison", `if token == "" {`, `if token == "" {`},
		{"php arrow", `'password' => 'x1',`, `'password' => '[REDACTED]',`},
		{"blanks around separator", "PASSWORD   =   spaced  ,", "PASSWORD   =   [REDACTED]  ,"},
		{"query string", "https://h/x?access_token=abc123&page=2", "https://h/x?access_token=[REDACTED]&page=2"},
		{"unclosed quote to end of line", "secret: \"abc def\nnext", "secret: \"[REDACTED]\nnext"},
		{"counts are not secrets", `{"max_tokens": 100, "input_tokens": 5, "tokenizer": "bpe", "token_count": 3}`, `{"max_tokens": 100, "input_tokens": 5, "tokenizer": "bpe", "token_count": 3}`},
		{"unrelated pairs", "name=bob key: value monkey=banana", "name=bob key: value monkey=banana"},
		{"url scheme after name", "token://x", "token://x"},
		// Idempotence on existing markers.
		{"marker kept", "password=[REDACTED] Bearer [REDACTED]", "password=[REDACTED] Bearer [REDACTED]"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *Redactor
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got  %q\n want %q", tt.in, got, tt.want)
			}
			if got := string(New().Bytes([]byte(tt.in))); got != tt.want {
				t.Errorf("Bytes(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStringReturnsInputWhenClean(t *testing.T) {
	r := New()
	r.AddValue("hunter2hunter2")
	in := strings.Repeat("ordinary text: a=b, https://example.com/path ", 20)
	if got := r.String(in); got != in {
		t.Fatalf("clean text changed: %q", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { r.String(in) }); allocs != 0 {
		t.Errorf("String on clean text allocates %v times", allocs)
	}
	b := []byte(in)
	if got := r.Bytes(b); &got[0] != &b[0] {
		t.Error("Bytes on clean text did not return its input")
	}
}

func TestIsSecretName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"OPENAI_API_KEY", true},
		{"x-api-key", true},
		{"apiKey", true},
		{"Api Key", true},
		{"api.key", true},
		{"GITHUB_TOKEN", true},
		{"TELEGRAM_BOT_TOKEN", true},
		{"csrf-token", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"aws_access_key_id", true},
		{"DB_PASSWORD", true},
		{"passwd", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"ssh_private_key", true},
		{"privatekey", true},
		{"GPG_PASSPHRASE", true},
		{"Cookie", true},
		{"Set-Cookie", true},
		{"Authorization", true},
		{"client_secret", true},
		{"max_tokens", false},
		{"input_tokens", false},
		{"tokenizer", false},
		{"TOKEN_COUNT", false},
		{"token_limit", false},
		{"HOME", false},
		{"PATH", false},
		{"key", false},
		{"monkey", false},
		{"PWD", false},
		{"", false},
		{strings.Repeat("x", 100) + "_TOKEN", true},
		{"TOKEN_" + strings.Repeat("x", 100), false}, // only the last 64 bytes count
	}
	for _, tt := range tests {
		if got := IsSecretName(tt.name); got != tt.want {
			t.Errorf("IsSecretName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAddValue(t *testing.T) {
	const secret = `s3cr3t/v@lue+"quoted"`
	r := New()
	r.AddValue(secret)
	r.AddValue("short")    // below MinValueLen
	r.AddValue("        ") // white space only
	tests := []struct{ name, in string }{
		{"raw", "x " + secret + " y"},
		{"json", `{"v":"s3cr3t/v@lue+\"quoted\""}`},
		{"json html", `s3cr3t/v@lue+\"quoted\"`},
		{"query escaped", "?v=" + url.QueryEscape(secret)},
		{"path escaped", "/" + url.PathEscape(secret)},
		{"base64", "data: " + base64.StdEncoding.EncodeToString([]byte(secret))},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte(secret))},
	}
	for _, tt := range tests {
		got := r.String(tt.in)
		if !strings.Contains(got, Marker) {
			t.Errorf("%s: %q not masked: %q", tt.name, tt.in, got)
		}
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("%s: secret survives in %q", tt.name, got)
		}
	}
	if got := r.String("short and        spaced"); got != "short and        spaced" {
		t.Errorf("short or blank values were registered: %q", got)
	}
	// Overlapping and repeated occurrences are masked as one.
	r2 := New()
	r2.AddValue("abababab")
	if got := r2.String("xabababababx"); got != "x[REDACTED]x" {
		t.Errorf("overlapping occurrences: %q", got)
	}
}

func TestAddValueLongestWins(t *testing.T) {
	r := New()
	r.AddValue("abcdefgh")
	r.AddValue("abcdefghijklmnop")
	if got := r.String("<abcdefghijklmnop>"); got != "<[REDACTED]>" {
		t.Errorf("got %q", got)
	}
	if got := r.String("<abcdefghijk>"); got != "<[REDACTED]ijk>" {
		t.Errorf("got %q", got)
	}
}

func TestAddValueOverlappingMarker(t *testing.T) {
	tests := []struct {
		value, in, want string
	}{
		// The value's "D]" prefix could be the end of a Marker; only the
		// rest is registered.
		{"D]hunter2hunter2", "pw D]hunter2hunter2", "pw D][REDACTED]"},
		{"hunter2hunter2[RED", "hunter2hunter2[RED!", "[REDACTED][RED!"},
		{"abcdefgh[REDACTED]ijklmnop", "abcdefgh[REDACTED]ijklmnop", "[REDACTED][REDACTED][REDACTED]"},
		{"REDACTED", "REDACTED [REDACTED]", "REDACTED [REDACTED]"},
	}
	for _, tt := range tests {
		r := New()
		r.AddValue(tt.value)
		got := r.String(tt.in)
		if got != tt.want {
			t.Errorf("value %q: String(%q) = %q, want %q", tt.value, tt.in, got, tt.want)
		}
		if again := r.String(got); again != got {
			t.Errorf("value %q: not idempotent: %q → %q", tt.value, got, again)
		}
	}
}

func TestAddFromEnv(t *testing.T) {
	r := New()
	r.AddFromEnv([]string{
		"OPENAI_API_KEY=key-0123456789",
		"HOME=/home/someone-long",
		"DB_PASSWORD=pa55word-xyz",
		"MAX_TOKENS=4096000000",
		"MALFORMED",
	})
	in := "key-0123456789 /home/someone-long pa55word-xyz 4096000000"
	want := "[REDACTED] /home/someone-long [REDACTED] 4096000000"
	if got := r.String(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	r.AddValue("hunter2hunter2")
	r.AddFromEnv([]string{"API_KEY=hunter2hunter2"})
	if got := r.String("hunter2hunter2 api_key=x1"); got != "hunter2hunter2 api_key=[REDACTED]" {
		t.Errorf("nil Redactor: %q", got)
	}
	var zero Redactor
	zero.AddValue("hunter2hunter2")
	if got := zero.String("hunter2hunter2"); got != Marker {
		t.Errorf("zero Redactor: %q", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := New()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				v := fmt.Sprintf("value-%d-%04d-secret", g, i)
				r.AddValue(v)
				if got := r.String("<" + v + ">"); got != "<[REDACTED]>" {
					t.Errorf("own value not masked after AddValue: %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
