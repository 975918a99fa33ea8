package stackstart

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
)

func stackBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestGrowGrowsTheStack checks that Grow really needs a Frame-sized stack
// (the compiler has not shrunk its frame): a fresh goroutine that calls it
// gets a stack of at least Frame bytes, which shows in the runtime's count
// of memory held for stacks while that goroutine lives.
func TestGrowGrowsTheStack(t *testing.T) {
	before := make(chan uint64)
	grown := make(chan uint64)
	done := make(chan struct{})
	go func() {
		before <- stackBytes()
		Grow()
		grown <- stackBytes()
		<-done // keep the grown stack alive until both are read
	}()
	b, g := <-before, <-grown
	close(done)
	if g < b+Frame {
		t.Fatalf("stacks held %d bytes before Grow and %d after: want at least %d more", b, g, Frame)
	}
}

// TestImportsNothing keeps the package free of imports: with one, it would
// be initialised after that import and everything it needs, i.e. after the
// deep initialisers it exists to get ahead of.
func TestImportsNothing(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		n++
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			t.Errorf("%s imports %s; the package must import nothing", name, imp.Path.Value)
		}
	}
	if n == 0 {
		t.Fatal("no source files found")
	}
}
