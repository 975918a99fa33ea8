package bintest

import (
	"os"
	"strings"
	"testing"
)

func TestBuildOnceAndRemove(t *testing.T) {
	var s Set
	bin, err := s.Build("github.com/odekrun/odek/examples/echo-extension")
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Build("github.com/odekrun/odek/examples/echo-extension")
	if err != nil || again != bin || !strings.HasSuffix(bin, "echo-extension") {
		t.Fatalf("second Build = %q, %v; want %q", again, err, bin)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("binary: %v %v", fi, err)
	}
	if _, err := s.Build("github.com/odekrun/odek/no/such/cmd"); err == nil || !strings.Contains(err.Error(), "go build") {
		t.Fatalf("missing package: %v", err)
	}
	s.Remove()
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Fatalf("binary still there after Remove: %v", err)
	}
}
