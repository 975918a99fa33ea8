package host

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/sandbox"
)

// The defaults the config documents (and merges a project's value
// against) are the ones the sandbox applies to a limit left at 0; and
// every field of the section reaches the sandbox.
func TestSandboxDefaultsMatchConfig(t *testing.T) {
	want := map[string]int{
		"MaxMemoryMB": sandbox.DefaultMaxMemoryMB, "MaxCPUSeconds": sandbox.DefaultMaxCPUSeconds,
		"MaxProcesses": sandbox.DefaultMaxProcesses, "MaxFileSizeMB": sandbox.DefaultMaxFileSizeMB,
	}
	typ := reflect.TypeOf(config.Sandbox{})
	for name, def := range want {
		f, ok := typ.FieldByName(name)
		if !ok {
			t.Errorf("config.Sandbox has no %s", name)
			continue
		}
		if got := f.Tag.Get("default"); got != strconv.Itoa(def) {
			t.Errorf("config.Sandbox.%s default %q, the sandbox applies %d", name, got, def)
		}
	}
	full := config.Sandbox{Mode: "on", Confine: true, AllowConnectPorts: []int{1}, AllowBindPorts: []int{2},
		ReadOnlyPaths: []string{"/a"}, DenyPaths: []string{"/b"}, MaxMemoryMB: 3, MaxCPUSeconds: 4, MaxProcesses: 5, MaxFileSizeMB: 6}
	got := SandboxSettings(&config.Config{Sandbox: full})
	gv, fv := reflect.ValueOf(got), reflect.ValueOf(full)
	for i := range gv.NumField() {
		name := gv.Type().Field(i).Name
		if !reflect.DeepEqual(gv.Field(i).Interface(), fv.FieldByName(name).Interface()) {
			t.Errorf("SandboxSettings drops %s", name)
		}
	}
}
