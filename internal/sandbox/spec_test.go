package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

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
		{name: "deny a device", s: Settings{DenyPaths: []string{"/dev/urandom"}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices[:len(Devices)-1]}},
		{name: "operator denies all of /usr/local", s: Settings{DenyPaths: []string{"/usr/local"}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: append([]string{"/usr/bin", "/usr/lib"}, sys()[1:]...), ReadOnlyFiles: etcFiles, Devices: Devices}},
		{name: "limits pass through", s: Settings{MaxMemoryMB: 100, MaxProcesses: 5, MaxCPUSeconds: 7, MaxFileSizeMB: 9, JobMemoryMB: 300, JobCPUSeconds: 11}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices, MaxMemoryMB: 100, MaxProcesses: 5, MaxCPUSeconds: 7, MaxFileSizeMB: 9, JobMemoryMB: 300, JobCPUSeconds: 11}},
		{name: "bind ports sorted and deduplicated", s: Settings{AllowBindPorts: []int{8080, 3000, 8080}}, p: base,
			want: Spec{Root: base.Root, TempDir: base.TempDir, ReadOnly: sys(), ReadOnlyFiles: etcFiles, Devices: Devices, BindPorts: []uint16{3000, 8080}}},
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
			// A limit the settings leave at 0 is on with its default.
			tt.want.MaxMemoryMB = orDefault(tt.want.MaxMemoryMB, DefaultMaxMemoryMB)
			tt.want.MaxCPUSeconds = orDefault(tt.want.MaxCPUSeconds, DefaultMaxCPUSeconds)
			tt.want.MaxProcesses = orDefault(tt.want.MaxProcesses, DefaultMaxProcesses)
			tt.want.MaxFileSizeMB = orDefault(tt.want.MaxFileSizeMB, DefaultMaxFileSizeMB)
			tt.want.JobMemoryMB = orDefault(tt.want.JobMemoryMB, DefaultJobMemoryMB)
			tt.want.JobCPUSeconds = orDefault(tt.want.JobCPUSeconds, DefaultJobCPUSeconds)
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
