package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// RequiredABI is the Landlock ABI the sandbox needs: filesystem rules
// (ABI 1), renames inside the root (2), truncation (3) and TCP connect
// rules (4, Linux 6.7). Later ABIs add device ioctls (5) and IPC scoping
// (6), which are used when the kernel has them.
const RequiredABI = 4

// SystemReadOnly are the paths a job's processes may read and execute
// when they exist: what a shell and the usual tools need.
var SystemReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// SystemDeny are never granted although they lie inside SystemReadOnly:
// host secrets and a system-wide odek configuration. Landlock only grants,
// so a denied path inside /etc makes NewSpec grant /etc entry by entry;
// it does that only for the denied paths odek's user can read at all
// (Lister.Reachable), so a worker that is not root, whose file modes
// already keep it from these, gets /etc as one rule.
var SystemDeny = []string{
	"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
	"/etc/ssl/private", "/etc/odek",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
}

// Devices are the device files a job's processes may read and write.
// /dev/tty is not among them: a job's processes run in a session of
// their own, without a controlling terminal.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// Spec is the ruleset of one job's processes, what the helper enforces.
// Everything not granted here is denied: other chats' directories,
// ODEK_HOME, /proc (other processes' command lines and environments),
// /tmp outside TempDir, every TCP port not listed.
type Spec struct {
	// Root is the job's root: read, write, create, rename inside.
	Root string `json:"root"`
	// TempDir is the job's private temporary directory (TMPDIR, HOME).
	TempDir string `json:"temp_dir"`
	// ReadOnly are read-and-execute directory hierarchies.
	ReadOnly []string `json:"read_only"`
	// ReadOnlyFiles are single read-and-execute files (what is left of a
	// directory split around a denied path).
	ReadOnlyFiles []string `json:"read_only_files,omitempty"`
	// Devices are read-write device files.
	Devices []string `json:"devices"`
	// ConnectPorts are the TCP ports connect(2) may reach.
	ConnectPorts []uint16 `json:"connect_ports,omitempty"`
	// BindPorts are the TCP ports bind(2) may take; non-empty ⇒ listen(2)
	// is allowed too.
	BindPorts []uint16 `json:"bind_ports,omitempty"`
	// MaxMemoryMB is RLIMIT_AS in MiB; 0 ⇒ none.
	MaxMemoryMB int `json:"max_memory_mb,omitempty"`
	// MaxCPUSeconds is RLIMIT_CPU in seconds; 0 ⇒ none.
	MaxCPUSeconds int `json:"max_cpu_seconds,omitempty"`
	// MaxProcesses is RLIMIT_NPROC; 0 ⇒ none.
	MaxProcesses int `json:"max_processes,omitempty"`
	// MaxFileSizeMB is RLIMIT_FSIZE in MiB; 0 ⇒ none.
	MaxFileSizeMB int `json:"max_file_size_mb,omitempty"`
	// LockSession makes the seccomp filter refuse setsid(2) and
	// setpgid(2): a Jail sets it on kernels without Landlock's signal
	// scoping, where it ends a job's processes by their process groups.
	LockSession bool `json:"lock_session,omitempty"`
	// Cgroup is the job's cgroup directory, which the helper joins before
	// it confines itself (a Jail sets it where per-job cgroups work; see
	// cgroup_linux.go); "" ⇒ none.
	Cgroup string `json:"cgroup,omitempty"`
	// CgroupsV1 are the job's cgroups in other cgroup v1 hierarchies
	// (memory, cpuacct), which the helper joins too.
	CgroupsV1 []string `json:"cgroups_v1,omitempty"`
	// JobMemoryMB is the memory limit of the job's cgroup in MiB; 0 ⇒
	// none.
	JobMemoryMB int `json:"job_memory_mb,omitempty"`
	// JobCPUSeconds is the CPU time the job's cgroup may use; 0 ⇒ none.
	JobCPUSeconds int `json:"job_cpu_seconds,omitempty"`
}

// HasLimits reports whether the spec sets any resource limit.
func (s Spec) HasLimits() bool {
	return s.MaxMemoryMB > 0 || s.MaxCPUSeconds > 0 || s.MaxProcesses > 0 || s.MaxFileSizeMB > 0
}

// Paths are the per-job inputs of NewSpec.
type Paths struct {
	// Root is the job's root directory (absolute). Required.
	Root string
	// TempDir is the job's private temporary directory (absolute).
	// Required.
	TempDir string
	// Deny are odek's own directories a job must not reach even if they
	// lie under a granted path: ODEK_HOME, the artifacts directory above
	// the chat's own, the directory of the config file.
	Deny []string
}

// ErrRootHoldsDenied is NewSpec's error for a root that contains a path
// the sandbox must not grant (running `odek run --confine` in a directory
// that holds ODEK_HOME, say).
var ErrRootHoldsDenied = errors.New("sandbox: the job's root contains a path the sandbox must not grant")

// Lister is what NewSpec asks of the file system.
type Lister interface {
	// Names lists a directory's entry names.
	Names(dir string) ([]string, error)
	// Reachable reports whether odek's user could read path without the
	// sandbox (it exists and its mode lets the user in). A denied path
	// that is not reachable needs no splitting around it.
	Reachable(path string) bool
	// Kind reports whether path exists and is a directory (symlinks
	// followed): Landlock grants directories and files with different
	// rights.
	Kind(path string) (exists, dir bool)
}

// NewSpec builds the ruleset of a job from the settings and the job's
// paths. It is pure but for fsys: when a reachable denied path lies inside
// a granted one, that directory is granted entry by entry (fsys.Names),
// without the denied one. A system path that is itself denied, or lies
// inside a denied path, is dropped.
func NewSpec(s Settings, p Paths, fsys Lister) (Spec, error) {
	return NewTemplate(s, p.Deny, fsys).For(p.Root, p.TempDir)
}

// Template is what the Specs of one process's jobs share: everything but
// the root and the temp dir (listing /etc and checking the denied paths
// once, not per job). A Template is immutable and safe for concurrent
// use; the Specs it makes share its slices, which nobody may modify.
type Template struct {
	spec Spec
	deny []string
}

// NewTemplate prepares the shared part of the Specs of jobs whose extra
// denied paths are deny (see NewSpec).
func NewTemplate(s Settings, deny []string, fsys Lister) *Template {
	t := &Template{deny: cleanAll(append(append(slices.Clone(SystemDeny), deny...), s.DenyPaths...))}
	t.spec = systemSpec(s, t.deny, fsys)
	return t
}

// For is the Spec of a job with this root and temp dir; ErrRootHoldsDenied
// when the root contains a denied path.
func (t *Template) For(root, tmp string) (Spec, error) {
	if !filepath.IsAbs(root) || !filepath.IsAbs(tmp) {
		return Spec{}, fmt.Errorf("sandbox: root %q and temp dir %q must be absolute paths", root, tmp)
	}
	root, tmp = filepath.Clean(root), filepath.Clean(tmp)
	for _, d := range t.deny {
		if within(root, d) {
			return Spec{}, fmt.Errorf("%w: %s holds %s", ErrRootHoldsDenied, root, d)
		}
	}
	spec := t.spec
	spec.Root, spec.TempDir = root, tmp
	return spec, nil
}

// systemSpec is a Spec without root and temp dir.
func systemSpec(s Settings, deny []string, fsys Lister) Spec {
	spec := Spec{
		MaxMemoryMB:   orDefault(s.MaxMemoryMB, DefaultMaxMemoryMB),
		MaxCPUSeconds: orDefault(s.MaxCPUSeconds, DefaultMaxCPUSeconds),
		MaxProcesses:  orDefault(s.MaxProcesses, DefaultMaxProcesses),
		MaxFileSizeMB: orDefault(s.MaxFileSizeMB, DefaultMaxFileSizeMB),
		JobMemoryMB:   orDefault(s.JobMemoryMB, DefaultJobMemoryMB),
		JobCPUSeconds: orDefault(s.JobCPUSeconds, DefaultJobCPUSeconds),
	}
	for _, ro := range cleanAll(append(slices.Clone(SystemReadOnly), s.ReadOnlyPaths...)) {
		spec.ReadOnly = append(spec.ReadOnly, grant(ro, deny, fsys, 0)...)
	}
	granted := dedupe(spec.ReadOnly)
	spec.ReadOnly = nil
	for _, p := range granted {
		exists, dir := true, true
		if fsys != nil {
			exists, dir = fsys.Kind(p)
		}
		switch {
		case !exists: // nothing to grant
		case dir:
			spec.ReadOnly = append(spec.ReadOnly, p)
		default:
			spec.ReadOnlyFiles = append(spec.ReadOnlyFiles, p)
		}
	}
	for _, d := range Devices {
		if !slices.ContainsFunc(deny, func(x string) bool { return within(x, d) }) {
			spec.Devices = append(spec.Devices, d)
		}
	}
	for _, port := range s.AllowConnectPorts {
		if !slices.Contains(spec.ConnectPorts, uint16(port)) {
			spec.ConnectPorts = append(spec.ConnectPorts, uint16(port))
		}
	}
	slices.Sort(spec.ConnectPorts)
	for _, port := range s.AllowBindPorts {
		if !slices.Contains(spec.BindPorts, uint16(port)) {
			spec.BindPorts = append(spec.BindPorts, uint16(port))
		}
	}
	slices.Sort(spec.BindPorts)
	return spec
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// maxGrantDepth bounds how deep grant splits a directory around denied
// paths.
const maxGrantDepth = 8

// grant returns the hierarchies to grant for path: itself when no denied
// path touches it, nothing when it is denied or inside a denied path, and
// its entries (recursively) when a denied path lies below it.
func grant(path string, deny []string, fsys Lister, depth int) []string {
	inner := false
	for _, d := range deny {
		if within(d, path) { // path is d or below it
			return nil
		}
		if within(path, d) && (fsys == nil || fsys.Reachable(d)) {
			inner = true
		}
	}
	if !inner {
		return []string{path}
	}
	if depth >= maxGrantDepth || fsys == nil {
		return nil // fail closed: grant nothing rather than the denied path
	}
	names, err := fsys.Names(path)
	if err != nil {
		return nil
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsRune(n, '/') {
			continue
		}
		out = append(out, grant(filepath.Join(path, n), deny, fsys, depth+1)...)
	}
	return out
}

// within reports whether p is root or lies below it, lexically.
func within(root, p string) bool {
	if root == p {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func cleanAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

func dedupe(paths []string) []string {
	seen := make(map[string]bool, len(paths))
	out := paths[:0]
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// WithReadOnly returns a Template whose jobs may also read and execute
// each of dirs (the operator's skill directories: a skill's scripts and
// files must be usable by a confined job) although they may lie inside
// container, a denied path (ODEK_HOME). A dir is skipped, and returned in
// skipped with the reason, when it is not an absolute path, does not
// exist or is not a directory, is container itself, contains a denied
// path, or lies inside a denied path other than container (another chat's
// directory, say). Nothing is writable through these grants. t is not
// modified.
func (t *Template) WithReadOnly(dirs []string, container string, fsys Lister) (*Template, []string) {
	out := &Template{spec: t.spec, deny: t.deny}
	out.spec.ReadOnly = slices.Clone(t.spec.ReadOnly)
	container = filepath.Clean(container)
	var skipped []string
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			skipped = append(skipped, dir+": not an absolute path")
			continue
		}
		dir = filepath.Clean(dir)
		why := ""
		for _, d := range t.deny {
			switch {
			case within(dir, d):
				why = "it holds " + d + ", which jobs may not read"
			case d != container && within(d, dir):
				why = "it lies inside " + d + ", which jobs may not read"
			}
			if why != "" {
				break
			}
		}
		if why == "" && fsys != nil {
			if exists, isDir := fsys.Kind(dir); !exists || !isDir {
				why = "not a directory"
			}
		}
		if why != "" {
			skipped = append(skipped, dir+": "+why)
			continue
		}
		if !slices.Contains(out.spec.ReadOnly, dir) {
			out.spec.ReadOnly = append(out.spec.ReadOnly, dir)
		}
	}
	return out, skipped
}
