package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFromSections(t *testing.T) {
	tests := []struct {
		name      string
		op, pr    string
		want      Settings
		warnings  int
		errSubstr string
	}{
		{name: "absent", want: Settings{}},
		{name: "operator sets all", op: `{"mode":"on","allow_connect_ports":[443,80],"read_only_paths":["/opt/tools"],"deny_paths":["/etc/app"],"max_memory_mb":512,"max_processes":64}`,
			want: Settings{Mode: ModeOn, AllowConnectPorts: []int{443, 80}, ReadOnlyPaths: []string{"/opt/tools"}, DenyPaths: []string{"/etc/app"}, MaxMemoryMB: 512, MaxProcesses: 64}},
		{name: "project turns it on", pr: `{"mode":"on","confine":true}`, want: Settings{Mode: ModeOn, Confine: true}},
		{name: "project may not turn it off", op: `{"mode":"on"}`, pr: `{"mode":"off"}`, want: Settings{Mode: ModeOn}, warnings: 1},
		{name: "project may not turn auto off", pr: `{"mode":"off"}`, want: Settings{}, warnings: 1},
		{name: "project removes a port", op: `{"allow_connect_ports":[443,80]}`, pr: `{"allow_connect_ports":[443]}`, want: Settings{AllowConnectPorts: []int{443}}},
		{name: "project empties the ports", op: `{"allow_connect_ports":[443]}`, pr: `{"allow_connect_ports":[]}`, want: Settings{}},
		{name: "project may not add a port", op: `{"allow_connect_ports":[443]}`, pr: `{"allow_connect_ports":[443,6379]}`, want: Settings{AllowConnectPorts: []int{443}}, warnings: 1},
		{name: "project read-only paths ignored", pr: `{"read_only_paths":["/home"]}`, want: Settings{}, warnings: 1},
		{name: "deny paths add up", op: `{"deny_paths":["/a"]}`, pr: `{"deny_paths":["/b"]}`, want: Settings{DenyPaths: []string{"/a", "/b"}}},
		{name: "project lowers caps", op: `{"max_memory_mb":1024,"max_processes":100}`, pr: `{"max_memory_mb":256,"max_processes":10}`, want: Settings{MaxMemoryMB: 256, MaxProcesses: 10}},
		{name: "project sets a cap the operator left open", pr: `{"max_memory_mb":256}`, want: Settings{MaxMemoryMB: 256}},
		{name: "project may not raise caps", op: `{"max_memory_mb":256}`, pr: `{"max_memory_mb":1024}`, want: Settings{MaxMemoryMB: 256}, warnings: 1},
		{name: "bad mode", op: `{"mode":"maybe"}`, errSubstr: `sandbox.mode "maybe"`},
		{name: "bad port", op: `{"allow_connect_ports":[0]}`, errSubstr: "port 0 is not in 1-65535"},
		{name: "big port", pr: `{"allow_connect_ports":[70000]}`, errSubstr: "project sandbox.allow_connect_ports: port 70000"},
		{name: "relative path", op: `{"read_only_paths":["opt"]}`, errSubstr: `sandbox.read_only_paths: "opt" is not an absolute path`},
		{name: "negative memory", op: `{"max_memory_mb":-1}`, errSubstr: "sandbox.max_memory_mb -1"},
		{name: "negative processes", pr: `{"max_processes":-3}`, errSubstr: "project sandbox.max_processes -3"},
		{name: "wrong type", op: `{"mode":1}`, errSubstr: "operator sandbox section"},
		{name: "too many ports", op: `{"allow_connect_ports":[` + strings.Repeat("1,", MaxPorts) + `1]}`, errSubstr: "at most 64"},
		{name: "unknown keys ignored", op: `{"future":true}`, want: Settings{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns, err := FromSections(raw(tt.op), raw(tt.pr))
			if tt.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSubstr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(norm(got), norm(tt.want)) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if len(warns) != tt.warnings {
				t.Errorf("warnings %q, want %d", warns, tt.warnings)
			}
		})
	}
}

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// norm makes empty and nil slices equal.
func norm(s Settings) Settings {
	if len(s.AllowConnectPorts) == 0 {
		s.AllowConnectPorts = nil
	}
	if len(s.ReadOnlyPaths) == 0 {
		s.ReadOnlyPaths = nil
	}
	if len(s.DenyPaths) == 0 {
		s.DenyPaths = nil
	}
	return s
}

func TestActive(t *testing.T) {
	tests := []struct {
		s            Settings
		server, want bool
	}{
		{Settings{}, true, true},
		{Settings{}, false, false},
		{Settings{Confine: true}, false, true},
		{Settings{Mode: ModeOn}, false, true},
		{Settings{Mode: ModeOff}, true, false},
		{Settings{Mode: ModeOff, Confine: true}, false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Active(tt.server); got != tt.want {
			t.Errorf("%+v.Active(%v) = %v, want %v", tt.s, tt.server, got, tt.want)
		}
	}
}

// fakeFS is a made-up tree; every path in it is reachable unless listed
// in hidden.
type fakeFS struct {
	tree   map[string][]string
	hidden map[string]bool
}

func (f fakeFS) Names(dir string) ([]string, error) {
	names, ok := f.tree[dir]
	if !ok {
		return nil, os.ErrNotExist
	}
	return names, nil
}

// Kind: the files of the tree are the names in fakeFiles; everything else
// exists and is a directory.
func (f fakeFS) Kind(p string) (exists, dir bool) { return true, !fakeFiles[p] }

var fakeFiles = map[string]bool{
	"/etc/hosts": true, "/etc/passwd": true, "/etc/ssh/moduli": true, "/etc/ssh/ssh_config": true,
	"/etc/ssh/ssh_host_ed25519_key.pub": true, "/etc/ssl/openssl.cnf": true,
}

func (f fakeFS) Reachable(p string) bool {
	if f.hidden[p] {
		return false
	}
	names := f.tree[filepath.Dir(p)]
	return slices.Contains(names, filepath.Base(p)) || f.tree[p] != nil
}

// failFS cannot list anything; every path is reachable.
type failFS struct{}

func (failFS) Names(string) ([]string, error) { return nil, os.ErrPermission }
func (failFS) Reachable(string) bool          { return true }
func (failFS) Kind(string) (bool, bool)       { return true, true }

func TestNewSpec(t *testing.T) {
	etc := map[string][]string{
		"/etc":     {"passwd", "shadow", "ssh", "ssl", "odek", "hosts", "gshadow", "sudoers", "sudoers.d", "shadow-", "gshadow-"},
		"/etc/ssh": {"ssh_config", "ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "moduli"},
		"/etc/ssl": {"certs", "private", "openssl.cnf"},
		"/usr":     {"bin", "lib", "local"},
		"/srv":     {"odek", "www"},
	}
	base := Paths{Root: "/srv/odek/artifacts/42", TempDir: "/tmp/odek-job-1", Deny: []string{"/srv/odek", "/root/.odek"}}
	etcFiles := []string{"/etc/hosts", "/etc/passwd", "/etc/ssh/moduli", "/etc/ssh/ssh_config", "/etc/ssh/ssh_host_ed25519_key.pub", "/etc/ssl/openssl.cnf"}
	sys := func(extra ...string) []string {
		out := []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ssl/certs"}
		return append(out, extra...)
	}
	tests := []struct {
		name  string
		s     Settings
		p     Paths
		want  Spec
		isErr error
	}{
		{name: "defaults", p: base, want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices}},
		{name: "ports sorted and deduplicated", s: Settings{AllowConnectPorts: []int{443, 80, 443}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices, ConnectPorts: []uint16{80, 443}}},
		{name: "extra read-only path", s: Settings{ReadOnlyPaths: []string{"/opt/tools/"}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys("/opt/tools"), ReadOnlyFiles: etcFiles, Devices: Devices}},
		{name: "extra read-only path inside odek home is dropped", s: Settings{ReadOnlyPaths: []string{"/root/.odek/sessions"}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices}},
		{name: "read-only path holding the artifacts dir is split", s: Settings{ReadOnlyPaths: []string{"/srv"}},
			p:    Paths{Root: "/srv/odek/artifacts/42", TempDir: "/tmp/x", Deny: []string{"/srv/odek"}},
			want: Spec{Root: "/srv/odek/artifacts/42", TempDir: "/tmp/x", ReadOnly: sys("/srv/www"), ReadOnlyFiles: etcFiles, Devices: Devices}},
		{name: "deny a device", s: Settings{DenyPaths: []string{"/dev/tty"}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices[:len(Devices)-1]}},
		{name: "operator denies all of /usr/local", s: Settings{DenyPaths: []string{"/usr/local"}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: append([]string{"/usr/bin", "/usr/lib"}, sys()[1:]...), ReadOnlyFiles: etcFiles, Devices: Devices}},
		{name: "limits pass through", s: Settings{MaxMemoryMB: 100, MaxProcesses: 5}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices, MaxMemoryMB: 100, MaxProcesses: 5}},
		{name: "root holding odek home", p: Paths{Root: "/root", TempDir: "/tmp/x", Deny: []string{"/root/.odek"}}, isErr: ErrRootHoldsDenied},
		{name: "root equal to a denied path", p: Paths{Root: "/root/.odek", TempDir: "/tmp/x", Deny: []string{"/root/.odek"}}, isErr: ErrRootHoldsDenied},
		{name: "root at /", p: Paths{Root: "/", TempDir: "/tmp/x"}, isErr: ErrRootHoldsDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewSpec(tt.s, tt.p, fakeFS{tree: etc})
			if tt.isErr != nil {
				if !errors.Is(err, tt.isErr) {
					t.Fatalf("err = %v, want %v", err, tt.isErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			for _, ro := range append(slices.Clone(got.ReadOnly), got.ReadOnlyFiles...) {
				for _, d := range append(slices.Clone(SystemDeny), tt.p.Deny...) {
					if within(d, ro) || within(ro, d) {
						t.Errorf("read-only %s grants denied %s", ro, d)
					}
				}
			}
		})
	}
	if _, err := NewSpec(Settings{}, Paths{Root: "rel", TempDir: "/tmp"}, nil); err == nil {
		t.Error("a relative root was accepted")
	}
	// Denied files odek's user cannot read anyway (a worker that is not
	// root) need no split: /etc is one rule.
	hidden := map[string]bool{}
	for _, d := range SystemDeny {
		hidden[d] = true
	}
	got, err := NewSpec(Settings{}, base, fakeFS{tree: etc, hidden: hidden})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}; !reflect.DeepEqual(got.ReadOnly, want) {
		t.Errorf("unreachable denied files: read-only %v, want %v", got.ReadOnly, want)
	}
}

// Without a way to list /etc, the sandbox grants none of it rather than
// the denied files inside.
func TestNewSpecFailsClosedWithoutListing(t *testing.T) {
	got, err := NewSpec(Settings{}, Paths{Root: "/w", TempDir: "/t"}, failFS{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(got.ReadOnly, func(p string) bool { return within("/etc", p) }) {
		t.Errorf("granted %v", got.ReadOnly)
	}
}

func TestEnv(t *testing.T) {
	spec := Spec{TempDir: "/tmp/job"}
	got := Env(spec, []string{"PATH=/bin", "REDIS_URL=redis://:pw@redis:6379", "LANG=C.UTF-8", "ODEK_API_KEY=sk-x", "HOME=/root", "TELEGRAM_BOT_TOKEN=1:x"})
	want := []string{"PATH=/bin", "LANG=C.UTF-8", "HOME=/tmp/job", "TMPDIR=/tmp/job"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	if got := Env(spec, nil); got[0] != "PATH="+defaultPath {
		t.Errorf("Env without PATH = %q", got)
	}
}

func FuzzFromSections(f *testing.F) {
	f.Add([]byte(`{"mode":"on","allow_connect_ports":[443]}`), []byte(`{"allow_connect_ports":[443,80],"mode":"off"}`))
	f.Add([]byte(`null`), []byte(`{"max_memory_mb":1e3}`))
	f.Add([]byte(`{"deny_paths":["/a"]}`), []byte(`{"deny_paths":["b"]}`))
	f.Fuzz(func(t *testing.T, op, pr []byte) {
		s, _, err := FromSections(op, pr)
		if err != nil {
			return
		}
		o, _, err := FromSections(op, nil)
		if err != nil {
			t.Fatalf("operator alone fails but both pass: %v", err)
		}
		// A project can never loosen the operator's settings.
		if o.Mode == ModeOn && s.Mode != ModeOn || o.Mode == ModeAuto && s.Mode == ModeOff {
			t.Fatalf("mode loosened: %q -> %q", o.Mode, s.Mode)
		}
		for _, p := range s.AllowConnectPorts {
			if !slices.Contains(o.AllowConnectPorts, p) {
				t.Fatalf("port %d added", p)
			}
		}
		if !slices.Equal(s.ReadOnlyPaths, o.ReadOnlyPaths) {
			t.Fatalf("read-only paths changed: %v -> %v", o.ReadOnlyPaths, s.ReadOnlyPaths)
		}
		if o.MaxMemoryMB > 0 && (s.MaxMemoryMB == 0 || s.MaxMemoryMB > o.MaxMemoryMB) {
			t.Fatalf("memory cap loosened: %d -> %d", o.MaxMemoryMB, s.MaxMemoryMB)
		}
	})
}
