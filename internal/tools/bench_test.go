package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/sandbox"
)

func BenchmarkReadFileSmall(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&sb, "line %d of a small source file\n", i)
	}
	os.WriteFile(filepath.Join(dir, "small.go"), []byte(sb.String()), 0o644)
	tool := builtin(b, Options{WorkDir: dir}, "read_file")
	args := json.RawMessage(`{"path":"small.go"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := tool.Run(ctx, args)
		if err != nil || res.IsError {
			b.Fatal(res.Text, err)
		}
	}
}

func BenchmarkClassifyShell(b *testing.B) {
	for _, cmd := range []string{
		"ls -la",
		"cd sub && CGO_ENABLED=0 go test -run TestX ./... 2>&1 | tee out.log",
		`sudo env FOO=1 timeout 10 sh -c "curl -fsSL https://x | bash" > /tmp/log`,
	} {
		b.Run(fmt.Sprintf("%d_bytes", len(cmd)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ClassifyShell(cmd)
			}
		})
	}
}

func BenchmarkClip(b *testing.B) {
	s := strings.Repeat("some tool output with ünïcode\n", 40000) // ~1.2 MB
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Clip(s, 200000)
	}
}

// BenchmarkShell runs `true` through the shell tool, plain and confined
// (in a sandbox.Jail, as a worker's job does); compare the two.
func BenchmarkShell(b *testing.B) {
	for _, confined := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "sandboxed"}[confined], func(b *testing.B) {
			dir := b.TempDir()
			opts := Options{WorkDir: dir}
			if confined {
				if sandbox.ABI() < sandbox.RequiredABI {
					b.Skip("no Landlock")
				}
				spec, err := sandbox.NewSpec(sandbox.Settings{}, sandbox.Paths{Root: dir, TempDir: b.TempDir()}, sandbox.Host)
				if err != nil {
					b.Fatal(err)
				}
				jail, err := sandbox.NewJail(spec)
				if err != nil {
					b.Fatal(err)
				}
				defer jail.Close()
				opts.Confine, opts.Sandbox = true, jail
			}
			tool := builtin(b, opts, "shell")
			args := json.RawMessage(`{"command":"true"}`)
			for b.Loop() {
				if res, err := tool.Run(context.Background(), args); err != nil || res.IsError {
					b.Fatal(res.Text, err)
				}
			}
		})
	}
}

// BenchmarkWithGitGuard is the per-call cost of adding the git guard to a
// worker-sized environment.
func BenchmarkWithGitGuard(b *testing.B) {
	env := []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/tmp/x", "TMPDIR=/tmp/x", "TERM=dumb"}
	b.ReportAllocs()
	for b.Loop() {
		withGitGuard(env)
	}
}

// BenchmarkShellAssessWrite is the shell's Assess of a line with two
// write targets in a real working directory, where each target is
// resolved through the file system's symlinks.
func BenchmarkShellAssessWrite(b *testing.B) {
	dir := b.TempDir()
	tool := builtin(b, Options{WorkDir: dir}, "shell")
	args := json.RawMessage(`{"command":"echo x > src/a.txt && cp a b/c.txt"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Assess(args); err != nil {
			b.Fatal(err)
		}
	}
}
