package redact

import (
	"fmt"
	"strings"
	"testing"
)

// ordinaryText is about 8 KiB of what tool results look like: log lines,
// Go source, JSON, prose with URLs; dense in ':' and '=', which the
// key/value detector must look at. It contains no secret.
var ordinaryText = func() string {
	parts := []string{
		"2026-08-07T12:00:00Z INFO  server started on :8080 (pid=4242, workers=4)\n",
		"func (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != http.MethodGet {\n\t\thttp.Error(w, \"method not allowed\", 405)\n\t\treturn\n\t}\n}\n",
		`{"id": 17, "name": "build", "status": "passed", "duration_ms": 4123, "max_tokens": 4096, "url": "https://ci.example.com/runs/17"}` + "\n",
		"The quick brown fox jumps over the lazy dog. See https://example.com/docs/getting-started for more; it covers the basics of configuration.\n",
		"ok  \tgithub.com/odekrun/odek/internal/config\t0.412s\tcoverage: 81.2% of statements\n",
		"- name: install dependencies\n  run: go mod download\n  env:\n    GOFLAGS: -mod=readonly\n",
	}
	var b strings.Builder
	for i := 0; b.Len() < 8<<10; i++ {
		b.WriteString(parts[i%len(parts)])
	}
	return b.String()[:8<<10]
}()

// proseText is about 8 KiB of English prose, the shape of model output.
var proseText = func() string {
	const para = "The build finished in four minutes; two of the integration suites were " +
		"skipped because the database container did not start in time. Retrying with a " +
		"longer health-check interval fixed it, and the report now lists every case as " +
		"passed. Next, I will update the changelog and open a pull request for review.\n\n"
	return strings.Repeat(para, 8<<10/len(para)+1)[:8<<10]
}()

// secretText is ordinaryText with a secret of each kind mixed in.
var secretText = func() string {
	secrets := []string{
		"OPENAI_API_KEY=sk-proj-AbCdEf1234567890abcdefGHIJ\n",
		"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc123\n",
		`{"password": "hunter2", "user": "bob"}` + "\n",
		"postgres://admin:s3cr3t@db:5432/app\n",
		"token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0\n",
		"pw " + benchValue + "\n",
	}
	t := ordinaryText
	step := len(t) / len(secrets)
	var b strings.Builder
	for i, s := range secrets {
		b.WriteString(t[i*step : (i+1)*step])
		b.WriteString(s)
	}
	return b.String()
}()

// benchRedactor returns a Redactor with n registered values shaped like
// real credentials: 40 random-looking base62 characters. Each also brings
// its encodings.
// benchValue is the first value benchRedactor registers.
var benchValue = func() string {
	for v := range benchRedactor(1).raw {
		return v
	}
	panic("no value")
}()

func benchRedactor(n int) *Redactor {
	r := New()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	x := uint64(0x9E3779B97F4A7C15)
	for range n {
		v := make([]byte, 40)
		for j := range v {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			v[j] = alphabet[x%uint64(len(alphabet))]
		}
		r.AddValue(string(v))
	}
	return r
}

func BenchmarkString(b *testing.B) {
	for _, bc := range []struct {
		name   string
		text   string
		values int
	}{
		{"clean-8KiB/no-values", ordinaryText, 0},
		{"prose-8KiB/no-values", proseText, 0},
		{"clean-8KiB/10-values", ordinaryText, 10},
		{"clean-8KiB/100-values", ordinaryText, 100},
		{"secrets-8KiB/10-values", secretText, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := benchRedactor(bc.values)
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				r.String(bc.text)
			}
		})
	}
}

func BenchmarkStream(b *testing.B) {
	for _, chunk := range []int{16, 512} {
		b.Run(fmt.Sprintf("chunk-%d", chunk), func(b *testing.B) {
			r := benchRedactor(10)
			text := secretText
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			s := r.NewStream(func(string) {})
			for b.Loop() {
				for i := 0; i < len(text); i += chunk {
					s.Write(text[i:min(i+chunk, len(text))])
				}
				s.Flush()
			}
		})
	}
}
