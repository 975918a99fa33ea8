package tools

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Programs a repository's own configuration names (issue 21).
//
// A git repository's configuration can name programs that everyday
// commands run: a filter driver's clean and smudge commands run on
// git status, add, commit and checkout of any path a .gitattributes
// selects; a diff driver's command or textconv on git diff, log -p and
// show; a merge driver on merge; an alias starting with "!"; an included
// file can hold any of these. The git guard (gitguard.go) overrides the
// keys git lets a later configuration entry turn off, but drivers are
// keyed by a name the repository chooses, and git 2.39 has no switch that
// turns .gitattributes off (2.40's GIT_ATTR_SOURCE would). So before a
// git command is rated, the shell tool's Assess reads the configuration
// of every repository that command could use — the one git would
// discover from each directory the command line may run it in, the
// worktree and common directories' files, the job's global configuration
// when confined, and, recursively, every submodule or embedded
// repository the index records (git status and add run git inside those)
// — and a key outside gitConfigAllowed makes the command code_execution,
// with the key and file named in the reason.
//
// The read is confined: it goes through an os.Root of the working
// directory (a symlink or gitdir pointer leading out of it fails), is
// bounded in size and count, and anything it cannot read, parse or bound
// rates the command code_execution too.

const (
	maxGitConfigBytes = 1 << 20  // a configuration file read in full
	maxGitIndexBytes  = 64 << 20 // an index read to find gitlinks
	maxGitRepos       = 64       // repositories inspected per command line
	maxGitLinks       = 256      // gitlinks followed per index
	maxGitDepth       = 4        // nested repositories below the top one
)

// gitConfigAllowed reports whether key (section.name or
// section.sub.name, section and name lower-cased) is one through which
// a repository's configuration cannot make an everyday git command run
// a program: a key that names none, or one the guard overrides.
func gitConfigAllowed(e gitConfigEntry) bool {
	if gitGuardKeys.get()[strings.ToLower(e.key())] {
		return true // overridden by the guard on every call
	}
	if e.sub == "" {
		switch e.section {
		case "user", "author", "committer", "color", "i18n", "init", "gc", "pack", "index", "fetch",
			"pull", "push", "rerere", "advice", "status", "log", "format", "column", "blame", "grep",
			"apply", "branch", "commit", "tag", "rebase", "worktree", "transfer", "feature", "safe",
			"pager", "checkout", "clone", "notes", "reset", "stash", "am", "versionsort", "mailmap",
			"submodule", "protocol", "http", "add", "splitindex", "fsck":
			if e.section == "submodule" && e.name != "recurse" && e.name != "fetchjobs" {
				return false
			}
			return true
		case "core":
			return gitCoreAllowed.has(e.name)
		case "extensions":
			return e.name == "objectformat" || e.name == "worktreeconfig" || e.name == "noop" || e.name == "preciousobjects"
		case "diff", "merge":
			// diff.external runs a program for every diff; the rest
			// (renames, algorithm, tool names for difftool/mergetool,
			// which the classifier does not rate safe) do not.
			return e.name != "external"
		case "alias":
			// An alias runs only as a git subcommand the classifier does
			// not know (unknown); one starting with "!" is a shell command.
			return e.value == nil || !strings.HasPrefix(strings.TrimLeft(*e.value, " \t"), "!")
		}
		return false
	}
	switch e.section {
	case "remote":
		switch e.name {
		case "url", "pushurl", "fetch", "push", "tagopt", "mirror", "prune", "prunetags", "skipdefaultupdate", "skipfetchall", "proxy":
			return true
		}
	case "branch":
		switch e.name {
		case "remote", "merge", "rebase", "pushremote", "description":
			return true
		}
	case "url":
		return e.name == "insteadof" || e.name == "pushinsteadof"
	case "credential":
		// credential.<url>.helper is emptied by the guard's empty
		// credential.helper; the rest name no program.
		return true
	case "http", "color":
		return true
	case "submodule":
		switch e.name {
		case "url", "path", "active", "branch", "ignore", "shallow", "fetchrecursesubmodules":
			return true
		}
	case "diff":
		// A diff driver's patterns; command and textconv run programs.
		switch e.name {
		case "xfuncname", "funcname", "wordregex", "binary":
			return true
		}
	case "merge":
		return e.name == "name"
	}
	return false
}

// gitCoreAllowed are the core.* keys that name no program.
var gitCoreAllowed = &wordSet{words: `repositoryformatversion filemode bare logallrefupdates ignorecase
	precomposeunicode autocrlf eol safecrlf quotepath checkstat trustctime untrackedcache splitindex
	compression loosecompression abbrev whitespace sharedrepository preloadindex fscache longpaths
	commitgraph multipackindex warnambiguousrefs attributesfile excludesfile hidedotfiles fsync
	fsyncmethod checkroundtripencoding deltabasecachelimit packedgitlimit packedgitwindowsize
	bigfilethreshold filesrefversion restrictinheritedhandles notesref createobject sparsecheckout
	sparsecheckoutcone usereplacerefs protecthfs protectntfs`}

// gitGuardKeys are the keys the guard sets on every call (lower-cased).
var gitGuardKeys = &lazy[map[string]bool]{build: func() map[string]bool {
	m := map[string]bool{}
	for _, kv := range gitGuard {
		m[strings.ToLower(kv[0])] = true
	}
	return m
}}

// gitInspector reads the repositories of one command line.
type gitInspector struct {
	root *os.Root // the working directory
	seen map[string]bool
	n    int
}

// gitRepoRuns is the reason a git command started in dir (relative to
// the working directory, slash-separated, cleaned) could run a program
// the chat's files name, or "" when none could. home is the job's HOME
// when it is a directory the job writes (a confined run), else "".
func gitRepoRuns(workDir, home string, dirs []string) string {
	if workDir == "" {
		return ""
	}
	root, err := os.OpenRoot(workDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "" // nothing there for a chat to have planted
		}
		return "git's repository cannot be inspected: " + err.Error()
	}
	defer root.Close()
	in := &gitInspector{root: root, seen: map[string]bool{}}
	if home != "" {
		if why := in.globalConfig(home); why != "" {
			return why
		}
	}
	for _, d := range dirs {
		if why := in.discover(d); why != "" {
			return why
		}
	}
	return ""
}

// globalConfig checks the files git reads as the global configuration
// under the job's HOME (XDG_CONFIG_HOME is not passed to jobs).
func (in *gitInspector) globalConfig(home string) string {
	hr, err := os.OpenRoot(home)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		return "the job's git configuration cannot be inspected: " + err.Error()
	}
	defer hr.Close()
	for _, f := range []string{".gitconfig", ".config/git/config"} {
		if why := checkConfigFile(hr, f, "~/"+f); why != "" {
			return why
		}
	}
	return ""
}

// discover walks from dir up to the working directory, as git's
// discovery does, and inspects every .git it meets (git skips one that
// is not a valid repository and goes on up, so each counts).
func (in *gitInspector) discover(dir string) string {
	dir = path.Clean(dir)
	if dir == ".." || strings.HasPrefix(dir, "../") || path.IsAbs(dir) {
		return "git runs in " + dir + ", outside the working directory, whose repository cannot be inspected"
	}
	for {
		if why := in.dotGit(dir, 0); why != "" {
			return why
		}
		if dir == "." {
			return ""
		}
		dir = path.Dir(dir)
	}
}

// dotGit inspects the repository whose .git entry is in dir, if any.
func (in *gitInspector) dotGit(dir string, depth int) string {
	dg := path.Join(dir, ".git")
	fi, err := in.root.Stat(dg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return ""
		}
		return "git's repository " + dg + " cannot be inspected: " + err.Error()
	}
	gitDir := dg
	if !fi.IsDir() {
		// A gitdir file: "gitdir: <path>" (a submodule, a linked worktree).
		b, err := readBounded(in.root, dg, 4096)
		if err != nil {
			return "git's repository pointer " + dg + " cannot be inspected: " + err.Error()
		}
		target, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
		if !ok {
			return "" // git does not take it for a repository
		}
		rel, ok := in.relative(dir, target)
		if !ok {
			return "git's repository " + dg + " points outside the working directory (" + target + ")"
		}
		gitDir = rel
	}
	return in.gitDir(gitDir, dir, depth)
}

// relative turns p, as git reads it from a file in dir, into a path
// relative to the working directory; false when it leads outside.
func (in *gitInspector) relative(dir, p string) (string, bool) {
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(in.root.Name(), p)
		if err != nil {
			return "", false
		}
		p = filepath.ToSlash(r)
	} else {
		p = path.Join(dir, p)
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// gitDir inspects one repository: its configuration files and, through
// its index, the repositories of its gitlinks (worktree is where they
// are checked out).
func (in *gitInspector) gitDir(gitDir, worktree string, depth int) string {
	if in.seen[gitDir] {
		return ""
	}
	in.seen[gitDir] = true
	if in.n++; in.n > maxGitRepos {
		return fmt.Sprintf("the command line reaches more than %d git repositories", maxGitRepos)
	}
	common := gitDir
	if b, err := readBounded(in.root, path.Join(gitDir, "commondir"), 4096); err == nil {
		rel, ok := in.relative(gitDir, strings.TrimRight(string(b), "\r\n"))
		if !ok {
			return "git's repository " + gitDir + " shares a directory outside the working directory"
		}
		common = rel
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "git's repository " + gitDir + " cannot be inspected: " + err.Error()
	}
	files := []string{path.Join(common, "config"), path.Join(gitDir, "config.worktree")}
	if common != gitDir {
		files = append(files, path.Join(gitDir, "config"))
	}
	sha256 := false
	for _, f := range files {
		if why := checkConfigFileHash(in.root, f, f, &sha256); why != "" {
			return why
		}
	}
	links, err := gitLinks(in.root, path.Join(gitDir, "index"), sha256)
	if err != nil {
		return "git's index " + path.Join(gitDir, "index") + " cannot be inspected: " + err.Error()
	}
	if len(links) > 0 && depth >= maxGitDepth {
		return fmt.Sprintf("git repositories nested more than %d deep", maxGitDepth)
	}
	for _, l := range links {
		if why := in.dotGit(path.Join(worktree, l), depth+1); why != "" {
			return why
		}
	}
	return ""
}

func checkConfigFile(root *os.Root, name, shown string) string {
	var sha bool
	return checkConfigFileHash(root, name, shown, &sha)
}

// checkConfigFileHash checks one configuration file (absent is fine) and
// notes whether it selects SHA-256 objects.
func checkConfigFileHash(root *os.Root, name, shown string, sha256 *bool) string {
	b, err := readBounded(root, name, maxGitConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return "git configuration " + shown + " cannot be inspected: " + err.Error()
	}
	entries, err := parseGitConfig(b)
	if err != nil {
		return "git configuration " + shown + " cannot be read as git reads it (" + err.Error() + ")"
	}
	for _, e := range entries {
		if e.section == "extensions" && e.name == "objectformat" && e.value != nil && strings.EqualFold(*e.value, "sha256") {
			*sha256 = true
		}
		if !gitConfigAllowed(e) {
			return "git configuration " + shown + " sets " + e.key() + ", which can name a program git runs"
		}
	}
	return ""
}

// readBounded reads a regular file through root, refusing one larger
// than max or of another type (a FIFO would block).
func readBounded(root *os.Root, name string, max int64) ([]byte, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|openGuard, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || !os.SameFile(st, fi) {
		return nil, fmt.Errorf("%s changed while it was read", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return b, nil
}

// gitLinks lists the paths of an index's gitlink entries (mode 160000:
// submodules and embedded repositories), which git status and git add
// run git in. A missing index has none; a split index is refused (its
// entries live in another file).
func gitLinks(root *os.Root, name string, sha256 bool) ([]string, error) {
	b, err := readBounded(root, name, maxGitIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseGitIndexLinks(b, sha256)
}

// parseGitIndexLinks reads the entries of a git index (versions 2, 3, 4)
// and returns the paths of its gitlinks.
func parseGitIndexLinks(b []byte, sha256 bool) ([]string, error) {
	hashLen := 20
	if sha256 {
		hashLen = 32
	}
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errors.New("not an index")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d", version)
	}
	count := binary.BigEndian.Uint32(b[8:12])
	off := 12
	var links []string
	var prev []byte
	for i := uint32(0); i < count; i++ {
		fixed := 40 + hashLen + 2
		if off+fixed > len(b) {
			return nil, errors.New("truncated entry")
		}
		e := b[off:]
		mode := binary.BigEndian.Uint32(e[24:28])
		flags := binary.BigEndian.Uint16(e[40+hashLen:])
		n := fixed
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, errors.New("extended flags in a version 2 index")
			}
			n += 2
			if off+n > len(b) {
				return nil, errors.New("truncated entry")
			}
		}
		var entryName []byte
		if version == 4 {
			strip, k := gitVarint(b[off+n:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, errors.New("bad path compression")
			}
			rest := b[off+n+k:]
			end := bytes.IndexByte(rest, 0)
			if end < 0 {
				return nil, errors.New("truncated path")
			}
			entryName = append(append([]byte{}, prev[:uint64(len(prev))-strip]...), rest[:end]...)
			off += n + k + end + 1
		} else {
			rest := b[off+n:]
			end := bytes.IndexByte(rest, 0)
			if end < 0 {
				return nil, errors.New("truncated path")
			}
			entryName = rest[:end]
			off += (n + end + 8) &^ 7
			if off > len(b) {
				return nil, errors.New("truncated entry")
			}
		}
		prev = entryName
		if mode>>12 == 0o16 {
			if len(links) >= maxGitLinks {
				return nil, fmt.Errorf("more than %d gitlinks", maxGitLinks)
			}
			p := string(entryName)
			if p == "" || path.IsAbs(p) || p != path.Clean(p) || p == ".." || strings.HasPrefix(p, "../") {
				return nil, fmt.Errorf("gitlink path %q", p)
			}
			links = append(links, p)
		}
	}
	// Extensions, before the trailing checksum.
	for off+8 <= len(b)-hashLen {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4 : off+8]))
		if sig == "link" {
			return nil, errors.New("a split index, whose entries live in another file")
		}
		if size < 0 || off+8+size > len(b) {
			return nil, errors.New("truncated extension")
		}
		off += 8 + size
	}
	return slices.Compact(links), nil
}

// gitVarint is git's offset varint (varint.c): each continuation adds
// one before shifting. It returns the value and the bytes read (0 when
// malformed).
func gitVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		val++
		c = b[i]
		i++
		val = val<<7 + uint64(c&127)
	}
	return val, i
}

// gitUse records where a command line runs git: the directories (relative
// to the working directory; "/" marks one outside it or unknown) git may
// start in.
type gitUse struct {
	dirs []string
	// writer is the first other program of the line that writes files
	// its words do not list (gitline.go), "" when none does.
	writer string
}

// outsideDir marks a start directory the classifier cannot place inside
// the working directory.
const outsideDir = "/"

// nested classifies a command line found inside this one (sh -c, env -S,
// xargs, trap), recording its git use with this line's.
func (c *classifier) nested(cmdline string) ShellVerdict {
	return classifyLine(cmdline, c.workDir, c.depth+1, c.gitUse)
}

// currentDirs are the directories the line may be in now.
func (c *classifier) currentDirs() []string {
	if c.cwdMoved {
		return []string{outsideDir}
	}
	if len(c.cwds) == 0 {
		return []string{"."}
	}
	return append([]string{"."}, c.cwds...)
}

// addCwd records a static cd to dir.
func (c *classifier) addCwd(dir string) {
	if len(c.cwds) >= 16 {
		c.cwdMoved = true
		return
	}
	next := moveDirs(c.currentDirs(), dir, c.workDir)
	c.cwds = append(c.cwds, next...)
}

// moveDirs applies a change of directory to dir (cd, git -C) to each of
// dirs.
func moveDirs(dirs []string, dir, workDir string) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		switch {
		case d == outsideDir:
			out = append(out, outsideDir)
		case strings.HasPrefix(dir, "~") || dir == "-" || dir == "":
			out = append(out, outsideDir)
		case path.IsAbs(dir):
			if workDir == "" {
				out = append(out, outsideDir)
				continue
			}
			r, err := filepath.Rel(workDir, dir)
			if err != nil || r == ".." || strings.HasPrefix(r, "../") {
				out = append(out, outsideDir)
				continue
			}
			out = append(out, filepath.ToSlash(r))
		default:
			j := path.Join(d, dir)
			if j == ".." || strings.HasPrefix(j, "../") {
				j = outsideDir
			}
			out = append(out, j)
		}
	}
	return out
}

// gitStartOption reports the directory argument of a git global option
// at args[i] that changes where git looks for its repository: -C dir,
// --git-dir (the directory holding it), --work-tree.
func gitStartOption(args []word, i int) (word, bool) {
	a := args[i]
	next := func() (word, bool) {
		if i+1 < len(args) {
			return args[i+1], true
		}
		return word{}, false
	}
	switch {
	case a.v == "-C" || a.v == "--work-tree":
		return next()
	case strings.HasPrefix(a.v, "-C") && len(a.v) > 2:
		return word{v: a.v[2:], dyn: a.dyn}, true
	case strings.HasPrefix(a.v, "--work-tree="):
		return word{v: a.v[len("--work-tree="):], dyn: a.dyn}, true
	case a.v == "--git-dir":
		w, ok := next()
		w.v = path.Dir(w.v)
		return w, ok
	case strings.HasPrefix(a.v, "--git-dir="):
		return word{v: path.Dir(a.v[len("--git-dir="):]), dyn: a.dyn}, true
	}
	return word{}, false
}

// gitRepoVerdict raises v to code_execution when a git command the line
// runs could run a program the configuration of a repository it may use
// names (gitRepoRuns); v already code_execution or above is kept.
func gitRepoVerdict(v ShellVerdict, g *gitUse, workDir, home string) ShellVerdict {
	if len(g.dirs) == 0 || Severity(v.Class) >= Severity(ClassCodeExecution) {
		return v
	}
	if g.writer != "" {
		return ShellVerdict{Class: ClassCodeExecution, Argv0: "git", Reason: "the line runs git beside " + g.writer +
			", which writes files its words do not name: one may be git's configuration, which git reads after it is checked"}
	}
	var dirs []string
	for _, d := range g.dirs {
		if d == outsideDir {
			return ShellVerdict{Class: ClassCodeExecution, Argv0: "git", Reason: "git runs in a directory outside the working directory, whose repository cannot be inspected"}
		}
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if why := gitRepoRuns(workDir, home, dirs); why != "" {
		return ShellVerdict{Class: ClassCodeExecution, Argv0: "git", Reason: why}
	}
	return v
}
