package tools

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ShellVerdict is the danger classification of one shell command line.
type ShellVerdict struct {
	// Class is the most severe class over every command the line runs.
	Class Class
	// Argv0 is the program name of the most severe command (leading
	// VAR=value assignments and wrappers such as sudo skipped, directories
	// stripped from standard binary paths); "" when none was found.
	Argv0 string
	// Reason says in a few words why the line got its class.
	Reason string
}

// severities orders the classes; a higher number is more severe.
var severities = map[Class]int{
	ClassSafe:          0,
	ClassLocalWrite:    1,
	ClassUnknown:       2,
	ClassNetworkEgress: 3,
	ClassCodeExecution: 4,
	ClassInstall:       5,
	ClassSystemWrite:   6,
	ClassDestructive:   7,
	ClassBlocked:       8,
}

// Severity ranks c: blocked > destructive > system_write > install >
// code_execution > network_egress > unknown > local_write > safe, from 8
// down to 0. A string that is not one of the Class constants ranks as
// unknown.
func Severity(c Class) int {
	if s, ok := severities[c]; ok {
		return s
	}
	return severities[ClassUnknown]
}

// validClass reports whether c is one of the Class constants.
func validClass(c Class) bool {
	_, ok := severities[c]
	return ok
}

// maxShellDepth bounds the nesting of substitutions and sh -c bodies the
// classifier follows; deeper lines are unknown.
const maxShellDepth = 16

// ClassifyShell classifies the command line that the shell tool would pass
// to sh -c. It parses the line with a bash parser (mvdan.cc/sh: quotes,
// escapes, pipes and lists, subshells, compound commands, functions,
// command and process substitution, redirections, here-documents), unwraps
// wrappers such as sudo, env, timeout and xargs, reads each command's
// options against the program's table (an option that names a program is
// code_execution in any spelling; an option a write-class program does not
// know is unknown; see classify_options.go), classifies every command and
// every redirection target (a write that can plant a program git or cargo
// runs on an everyday command, see programFile, is code_execution, and so
// is extracting an archive), and returns the most severe result. A line
// the parser rejects is unknown, or more severe when a piece of it would be
// (see salvage). Relative paths count as inside the working directory,
// absolute ones as outside it.
//
// ClassifyShell is a pure function and safe for concurrent use.
func ClassifyShell(cmdline string) ShellVerdict {
	return classifyShell(cmdline, "", 0)
}

// classifier holds the state of one command line walk.
type classifier struct {
	// workDir is the absolute working directory; "" means unknown, so
	// every absolute path is outside it.
	workDir string
	depth   int
	// cwdMoved is set after a cd away from the working directory: later
	// relative paths then point outside it. cwdTop is set when that cd
	// went to / or the home directory.
	cwdMoved, cwdTop bool
	// cwdGit is set after a cd into a .git directory (or another place
	// programFile names): later relative writes land there.
	cwdGit bool
	// cwds are the directories, relative to the working directory, the
	// line may be in at this point (nil ⇒ "."): every static relative cd
	// adds one, since the walk cannot tell which branch runs.
	cwds []string
	// gitUse, when not nil, records where the line runs git.
	gitUse *gitUse
	best   ShellVerdict
	// src is the text being walked; expansions are quoted from it.
	src string
	// lineFetch is set while walking a line one of whose substitutions
	// downloads something; fetched is set once any command walked
	// downloads something.
	lineFetch, fetched bool
}

// raise records class if it is more severe than the best so far, or fills
// in the program name of an equally severe verdict that lacks one.
func (c *classifier) raise(class Class, argv0, reason string) {
	switch {
	case c.best.Class == "" || Severity(class) > Severity(c.best.Class):
		c.best = ShellVerdict{Class: class, Argv0: argv0, Reason: reason}
	case Severity(class) == Severity(c.best.Class) && c.best.Argv0 == "" && argv0 != "":
		c.best = ShellVerdict{Class: class, Argv0: argv0, Reason: reason}
	}
}

func classifyShell(cmdline, workDir string, depth int) ShellVerdict {
	return classifyLine(cmdline, workDir, depth, nil)
}

// classifyLine is classifyShell recording, in g when not nil, where the
// line runs git (gitrepo.go).
func classifyLine(cmdline, workDir string, depth int, g *gitUse) ShellVerdict {
	if depth > maxShellDepth {
		return ShellVerdict{Class: ClassUnknown, Reason: "substitutions nested too deeply to classify"}
	}
	if isForkBomb(cmdline) {
		return ShellVerdict{Class: ClassBlocked, Argv0: ":", Reason: "fork bomb"}
	}
	if strings.IndexByte(cmdline, 0) >= 0 {
		// The parser skips NUL bytes; read each as a letter of the word
		// it sits in, and never below unknown.
		v := classifyLine(strings.ReplaceAll(cmdline, "\x00", "%"), workDir, depth, g)
		if Severity(v.Class) < Severity(ClassUnknown) {
			v = ShellVerdict{Class: ClassUnknown, Reason: "the command line contains a NUL byte"}
		}
		return v
	}
	if !utf8.ValidString(cmdline) {
		// The parser rejects bytes that are not UTF-8; the shell takes
		// them as letters of the word they sit in.
		cmdline = strings.ToValidUTF8(cmdline, "%")
	}
	f, err := parseShell(cmdline)
	if err != nil {
		return salvage(cmdline, workDir, depth)
	}
	c := &classifier{workDir: workDir, depth: depth, src: cmdline, gitUse: g}
	c.best = ShellVerdict{Class: ClassSafe, Reason: "empty command"}
	c.line(f.Stmts)
	return c.best
}

// segResult describes one simple command.
type segResult struct {
	argv0  string
	reason string
	// fetch marks a command that downloads content to stdout.
	fetch bool
	// interpreter marks a command that runs code read from stdin.
	interpreter bool
}

// word is one argument of a simple command.
type word struct {
	v   string
	dyn bool
	// mayOpt marks a word that may expand to an option at run time (see
	// mayBeOption).
	mayOpt bool
}

// writeTarget classifies writing to path p. A write that can plant a
// program another tool runs on an everyday command (programFile) is at
// least code_execution.
func (c *classifier) writeTarget(p string, dyn bool) (Class, string) {
	cl, why := c.writePlace(p, dyn)
	what := programFile(p)
	if what == "" && !dyn && !c.cwdMoved && c.workDir != "" {
		// A symlink that exists now may lead the write into .git.
		what = programFile(resolveExisting(c.workDir, p))
	}
	if what == "" && c.cwdGit && !dyn && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
		what = "a path under a .git directory (the shell is in one)"
	}
	if what != "" && Severity(cl) < Severity(ClassCodeExecution) {
		return ClassCodeExecution, what + ", which can name a program git or cargo runs on an everyday command"
	}
	return cl, why
}

// writePlace classifies writing to path p by where it is.
func (c *classifier) writePlace(p string, dyn bool) (Class, string) {
	switch {
	case p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr" || p == "/dev/tty" ||
		strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/"):
		return ClassSafe, p
	case strings.HasPrefix(p, "/dev/"):
		return ClassBlocked, "a device (" + p + ")"
	case dyn:
		return ClassSystemWrite, "a path decided at run time"
	case strings.HasPrefix(p, "~"):
		return ClassSystemWrite, "a path in the home directory"
	case strings.HasPrefix(p, "/"):
		if c.inWorkDir(p) {
			return ClassLocalWrite, "a path in the working directory"
		}
		return ClassSystemWrite, "an absolute path outside the working directory"
	}
	cp := path.Clean(p)
	if cp == ".." || strings.HasPrefix(cp, "../") || c.cwdMoved {
		return ClassSystemWrite, "a path outside the working directory"
	}
	return ClassLocalWrite, "a path in the working directory"
}

// programFile says what p is when a write to it can plant a program that
// a tool runs on an everyday command, "" otherwise: anything in a .git
// directory (hooks, config and the files it includes, info/attributes), a
// .gitattributes file (it selects the filter, diff and merge drivers the
// configuration defines), a git configuration file outside a repository
// (.gitconfig, .config/git/), and cargo's configuration (.cargo/config,
// .cargo/config.toml: build.rustc and its wrappers run on cargo metadata).
// A path component that is a pattern the shell may expand to one of those
// names counts as that name.
func programFile(p string) string {
	if p == "" {
		return ""
	}
	comps := strings.Split(path.Clean(p), "/")
	for i, comp := range comps {
		last := i == len(comps)-1
		switch {
		case nameLike(comp, ".git"):
			return "a path in a .git directory (" + p + ")"
		case last && (nameLike(comp, ".gitattributes") || nameLike(comp, ".gitconfig")):
			return "a git file (" + p + ")"
		case !last && nameLike(comp, ".config") && nameLike(comps[i+1], "git"):
			return "a git configuration file (" + p + ")"
		case !last && nameLike(comp, ".cargo") && (nameLike(comps[i+1], "config") || nameLike(comps[i+1], "config.toml")):
			return "a cargo configuration file (" + p + ")"
		}
	}
	return ""
}

// resolveExisting returns p (relative to root, or absolute) with every
// symlink along it resolved, dangling ones included (a link to a
// .git/config that does not exist yet still leads there), relative to
// root when it stays inside, else absolute; "" when a link cannot be read
// or links nest more than 40 deep. It is the only part of the classifier
// that looks at the file system, and only when a working directory is
// given (ClassifyShell gives none).
func resolveExisting(root, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	for links := 0; len(comps) > 0; {
		next := filepath.Join(cur, comps[0])
		comps = comps[1:]
		fi, err := os.Lstat(next)
		if err != nil {
			// The rest does not exist: it is what it says.
			cur = filepath.Join(append([]string{next}, comps...)...)
			break
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return ""
		}
		t, err := os.Readlink(next)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(cur, t)
		}
		comps = append(strings.Split(strings.TrimPrefix(filepath.Clean(t), "/"), "/"), comps...)
		cur = "/"
	}
	if rr, err := filepath.EvalSymlinks(root); err == nil {
		if rel, err := filepath.Rel(rr, cur); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(cur)
}

// nameLike reports whether the path component comp is name (in any case,
// as on a case-insensitive file system) or a pattern that may expand to
// it: a glob that matches it, or a brace expansion that mentions it.
func nameLike(comp, name string) bool {
	if strings.EqualFold(comp, name) {
		return true
	}
	if !strings.ContainsAny(comp, "*?[{\\") {
		return false
	}
	if strings.ContainsAny(comp, "{\\") {
		return strings.Contains(strings.ToLower(comp), strings.TrimPrefix(name, "."))
	}
	// The shell's patterns match a leading dot only with a literal one.
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(comp, ".") {
		return false
	}
	ok, err := path.Match(strings.ToLower(comp), name)
	return ok || err != nil
}

func (c *classifier) inWorkDir(p string) bool {
	if c.workDir == "" || c.cwdMoved {
		return false
	}
	cp := path.Clean(p)
	wd := path.Clean(c.workDir)
	return cp == wd || strings.HasPrefix(cp, strings.TrimSuffix(wd, "/")+"/")
}

// keywords are shell reserved words that may start a simple command; the
// command proper follows them.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"while": true, "until": true, "!": true, "{": true, "}": true, "esac": true, "in": true,
}

// assignmentName returns the variable name of a NAME=value word.
func assignmentName(w word) (string, bool) {
	eq := strings.IndexByte(w.v, '=')
	if eq <= 0 {
		return "", false
	}
	for i := 0; i < eq; i++ {
		ch := w.v[i]
		if !(ch == '_' || 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || i > 0 && '0' <= ch && ch <= '9') {
			return "", false
		}
	}
	return w.v[:eq], true
}

// standardBinDirs hold system programs; /usr/bin/rm is rm.
var standardBinDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/sbin": true, "/usr/sbin": true, "/usr/local/bin": true,
	"/usr/local/sbin": true, "/opt/homebrew/bin": true, "/usr/libexec": true,
}

// command classifies one simple command given its words.
func (c *classifier) command(words []word) segResult {
	// Leading assignments and reserved words.
	for len(words) > 0 {
		if name, ok := assignmentName(words[0]); ok {
			if execVar(name) {
				c.raise(ClassCodeExecution, name, "assignment to "+name+" changes what runs")
			}
			words = words[1:]
			continue
		}
		if keywords[words[0].v] && !words[0].dyn {
			words = words[1:]
			continue
		}
		break
	}
	if len(words) == 0 {
		return segResult{}
	}
	if words[0].v == "for" || words[0].v == "case" || words[0].v == "select" {
		c.raise(ClassSafe, words[0].v, "shell control flow")
		return segResult{argv0: words[0].v, reason: "shell control flow"}
	}
	minClass := ClassSafe
	minWhy := ""
	// wrapper is the innermost wrapper so far; input is set when one of
	// them appends words read from its input (xargs).
	wrapper := ""
	input := false
	for {
		if len(words) == 0 {
			return segResult{}
		}
		w0 := words[0]
		if w0.dyn || w0.mayOpt && wrapper != "" {
			if wrapper != "" {
				c.raise(ClassCodeExecution, wrapper, wrapper+" runs a program decided at run time")
				return segResult{argv0: wrapper, interpreter: true}
			}
			c.raise(ClassUnknown, w0.v, "program name decided at run time")
			return segResult{argv0: w0.v}
		}
		name := w0.v
		if strings.Contains(name, "/") {
			dir, base := path.Split(name)
			if standardBinDirs[path.Clean(dir)] {
				name = base
			} else {
				c.raise(ClassCodeExecution, name, "runs a program by path")
				return segResult{argv0: name, interpreter: true}
			}
		}
		args := words[1:]
		ws, ok := wrappers.get()[name]
		if !ok {
			if Severity(minClass) > 0 {
				c.raise(minClass, name, minWhy)
			}
			if s := specFor(name); input && s != nil && s.hasExec && !hasWord(args, "--") {
				c.raise(ClassCodeExecution, name, wrapper+" appends words from its input to "+name+
					", and one may be an option that runs a program (a -- before them makes them operands)")
			}
			return c.programInLine(name, args)
		}
		if ws.minClass != "" && Severity(ws.minClass) > Severity(minClass) {
			minClass, minWhy = ws.minClass, "runs as another user via "+name
			if ws.minClass == ClassCodeExecution {
				minWhy = name + " runs its command again and again"
			}
			c.raise(minClass, name, minWhy)
		}
		inner, done := c.unwrap(name, ws, args)
		if done {
			return segResult{argv0: name, reason: "wrapper"}
		}
		wrapper = name
		input = input || ws.input
		words = inner
	}
}

// Program tables for commands whose class does not depend on arguments.
var (
	safePrograms = &wordSet{words: `ls cat grep egrep fgrep rg ag echo printf pwd head tail wc uniq cut tr diff
		cmp file stat du df which whereis type whoami id date uname hostname printenv true false test [ [[
		basename dirname realpath readlink tree less more jq md5sum sha1sum sha256sum sha512sum
		base64 xxd od hexdump ps free uptime nproc lsof column fold fmt nl rev comm join paste
		expr seq sleep wait cd pushd popd exit return set unset export local readonly shift
		break continue : read getopts umask ulimit hash history jobs fg bg trap declare typeset
		let test tac strings zcat zgrep bzcat xzcat locale tty groups w who last env`}
	localWritePrograms = &wordSet{words: `mkdir touch cp mv ln tee rmdir mktemp install patch unzip tar gzip gunzip
		bzip2 bunzip2 xz unxz zip`}
	destructivePrograms = &wordSet{words: `rm unlink truncate shred wipe srm kill pkill killall
		git-clean`}
	blockedPrograms = &wordSet{words: `mkfs mke2fs mkswap fdisk sfdisk cfdisk parted gdisk wipefs shutdown reboot
		halt poweroff telinit fsck badblocks`}
	networkPrograms = &wordSet{words: `curl wget ssh scp sftp rsync nc ncat netcat telnet ftp ping ping6 dig
		nslookup host socat http https aria2c lftp mosh traceroute tracepath whois openssl`}
	installPrograms = &wordSet{words: `pip pip3 pipx apt apt-get aptitude yum dnf zypper pacman apk brew port
		gem conda mamba snap flatpak npx bunx uv poetry yarn pnpm npm bundle composer cpan cpanm nix-env`}
	interpreterPrograms = &wordSet{words: `python python2 python3 node nodejs deno bun ruby perl php lua luajit
		bash sh zsh dash ksh fish csh tcsh busybox eval source . Rscript julia java groovy scala
		osascript pwsh powershell tclsh expect awk gawk mawk nawk`}
	codePrograms = &wordSet{words: `make cmake ninja gcc cc clang g++ clang++ rustc javac tsc pytest jest
		mvn gradle bazel meson ctest docker podman kubectl helm terraform ansible ansible-playbook
		vagrant nix gdb strace ltrace valgrind watch crontab at batch vi vim nvim view rview rvim vimdiff
		gvim ex ed emacs emacsclient run-parts`}
	systemWritePrograms = &wordSet{words: `systemctl service mount umount useradd userdel usermod groupadd
		passwd chpasswd visudo iptables ip6tables nft ufw sysctl modprobe insmod rmmod hwclock
		timedatectl hostnamectl update-alternatives ldconfig launchctl swapon swapoff chattr`}
)

func words2set(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(s) {
		m[f] = true
	}
	return m
}

// program classifies a non-wrapper program with its arguments.
func (c *classifier) program(name string, args []word) segResult {
	r := segResult{argv0: name}
	set := func(class Class, why string) segResult {
		r.reason = why
		c.raise(class, name, why)
		return r
	}
	if strings.HasPrefix(name, "mkfs.") {
		return set(ClassBlocked, "formats a file system")
	}
	// Options are read against the program's table first: one that runs a
	// program, or one a write-class program does not know, raises the
	// class whatever the operands say.
	opts := &optResult{operands: args}
	if s := specFor(name); s != nil {
		opts = s.scan(args)
		if opts.class != "" {
			c.raise(opts.class, name, name+": "+opts.why)
		}
	}
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "fish":
		r.interpreter = true
		for i, a := range args {
			if a.v == "-c" && i+1 < len(args) {
				v := c.nested(args[i+1].v)
				if args[i+1].dyn {
					c.raise(ClassCodeExecution, name, name+" -c with a command decided at run time")
				}
				c.raise(v.Class, v.Argv0, name+" -c: "+v.Reason)
				break
			}
		}
		return set(ClassCodeExecution, "runs a shell")
	case "eval":
		joined := make([]string, len(args))
		for i, a := range args {
			joined[i] = a.v
		}
		v := c.nested(strings.Join(joined, " "))
		c.raise(v.Class, v.Argv0, "eval: "+v.Reason)
		r.interpreter = true // eval "$(curl ...)" runs what was downloaded
		return set(ClassCodeExecution, "evaluates a string as shell code")
	case "alias":
		for _, a := range args {
			if eq := strings.IndexByte(a.v, '='); eq > 0 {
				v := c.nested(a.v[eq+1:])
				c.raise(v.Class, v.Argv0, "alias: "+v.Reason)
			}
		}
		return set(ClassSafe, "defines an alias")
	case "python", "python2", "python3":
		r.interpreter = true
		for i, a := range args {
			if a.v == "-m" && i+1 < len(args) {
				switch args[i+1].v {
				case "pip", "pip3", "ensurepip":
					return c.packageManager("pip", args[i+2:], r)
				case "venv", "virtualenv":
					// -m looks in the working directory first: a venv.py
					// there is what runs.
					return set(ClassCodeExecution, name+" -m "+args[i+1].v+" runs a module the working directory can supply")
				}
				break
			}
		}
		return set(ClassCodeExecution, "runs "+name+" code")
	case "awk", "gawk", "mawk", "nawk":
		return c.awk(name, args, opts, r)
	case "sed":
		return c.sed(opts, r)
	case "sort":
		if len(opts.writes) > 0 {
			return c.writeArgs(name, opts.writes, r, "sort writes")
		}
		return set(ClassSafe, "sorts text")
	case "split":
		prefix := word{v: "x"}
		if len(opts.operands) > 1 {
			prefix = opts.operands[1]
		}
		return c.writeArgs(name, []word{prefix}, r, "split writes files")
	case "zip":
		return c.writeArgs(name, c.zip(args), r, "zip writes files")
	case "tar", "bsdtar", "gtar":
		if len(opts.scriptFiles) > 0 && !opts.seen["--verbatim-files-from"] {
			c.raise(ClassCodeExecution, name, name+" -T reads a list in which a line starting with '-' is an option, which may run a program")
		}
		if (opts.seen["-x"] || opts.seen["--extract"] || opts.seen["--get"]) && !opts.seen["-O"] && !opts.seen["--to-stdout"] {
			c.raise(ClassCodeExecution, name, extractWhy(name))
		}
		return c.writeArgs(name, append(opts.writes, opts.operands...), r, name+" writes files")
	case "unzip":
		for _, o := range []string{"-l", "-t", "-p", "-c", "-Z", "-v", "-z"} {
			if opts.seen[o] {
				return set(ClassSafe, "unzip "+o+" only reads")
			}
		}
		c.raise(ClassCodeExecution, name, extractWhy(name))
		return c.writeArgs(name, opts.writes, r, "unzip writes files")
	case "patch":
		if len(opts.operands) == 0 && len(opts.vals["-o"]) == 0 && len(opts.vals["--output"]) == 0 {
			c.raise(ClassCodeExecution, name, "patch writes the files its diff names, which may be .git/config or a hook that git runs")
		}
		return c.writeArgs(name, append(opts.writes, opts.operands...), r, name+" writes files")
	case "unset":
		for _, a := range opts.operands {
			if strings.HasPrefix(a.v, "GIT_") || a.dyn {
				return set(ClassCodeExecution, "unset "+a.v+" can drop the shell's git guard")
			}
		}
		return set(ClassSafe, "unsets shell variables")
	case "ssh", "slogin", "scp", "sftp":
		return c.ssh(name, opts, r)
	case "read", "mapfile", "readarray", "getopts", "printf":
		// Builtins that assign to variables named by their arguments.
		for i, a := range args {
			if name == "printf" && (i == 0 || args[i-1].v != "-v") {
				continue
			}
			if execVar(a.v) {
				c.raise(ClassCodeExecution, a.v, name+" assigns "+a.v+", which changes what runs")
			}
		}
	case "trap":
		// The action is a command line run when the signal comes.
		if ops := operands(args); len(ops) > 1 && ops[0].v != "-" && ops[0].v != "" {
			c.shellString("trap", ops[0])
		}
		return set(ClassSafe, "sets a signal handler")
	case "hash":
		for _, a := range args {
			if strings.HasPrefix(a.v, "-") && strings.Contains(a.v, "p") {
				return set(ClassCodeExecution, "hash -p makes a command name run another program")
			}
		}
		return set(ClassSafe, "hash only reads")
	case "ftp", "lftp", "tftp", "telnet":
		r.interpreter = true
		return set(ClassCodeExecution, name+" runs the ! commands in its input")
	case "openssl":
		for _, a := range args {
			if a.v == "-engine" || a.v == "-provider" || a.v == "-provider-path" {
				c.raise(ClassCodeExecution, name, "openssl "+a.v+" loads a module")
			}
		}
		return set(ClassNetworkEgress, name+" contacts the network")
	case "rsync", "aria2c", "socat", "nc", "ncat", "netcat":
		c.netExec(name, args, opts)
		return set(ClassNetworkEgress, name+" contacts the network")
	case "less", "more", "most":
		for _, o := range opts.operands {
			if strings.HasPrefix(o.v, "+") && !safePagerCommand(o.v) {
				c.raise(ClassCodeExecution, name, name+" runs the command "+quoteArg(o.v))
			}
		}
		if len(opts.scriptFiles) > 0 || len(opts.scripts) > 0 {
			c.raise(ClassCodeExecution, name, name+" reads key bindings, which can run programs")
		}
		if len(opts.writes) > 0 {
			return c.writeArgs(name, opts.writes, r, name+" writes a log file")
		}
		return set(ClassSafe, name+" only reads")
	case "man":
		if len(opts.scriptFiles) > 0 {
			c.raise(ClassCodeExecution, name, "man reads a configuration file that can name a pager")
		}
		return set(ClassUnknown, "unrecognised program man")
	case "find":
		return c.find(args, r)
	case "git":
		return c.git(args, r)
	case "go":
		return c.goTool(args, r)
	case "gofmt":
		for _, a := range args {
			if a.v == "-w" {
				return set(ClassLocalWrite, "rewrites Go files")
			}
		}
		return set(ClassSafe, "formats Go source to stdout")
	case "cargo":
		sub := firstOperand(args)
		switch sub {
		case "install", "add", "uninstall":
			return set(ClassInstall, "cargo "+sub+" installs packages")
		case "build", "run", "test", "check", "bench", "clippy", "doc":
			return set(ClassCodeExecution, "cargo "+sub+" compiles and runs build scripts")
		case "fmt":
			return set(ClassLocalWrite, "formats Rust source")
		case "fetch", "update":
			return set(ClassNetworkEgress, "cargo "+sub+" downloads")
		case "metadata", "tree":
			// Both run rustc to learn the target, and a project's
			// .cargo/config.toml (tracked content, too) can name it.
			return set(ClassCodeExecution, "cargo "+sub+" runs the rustc a project's .cargo/config.toml can name")
		case "--version", "version":
			return set(ClassSafe, "reads cargo metadata")
		}
		return set(ClassUnknown, "unrecognised cargo subcommand")
	case "pip", "pip3", "pipx", "apt", "apt-get", "aptitude", "yum", "dnf", "zypper", "pacman", "apk",
		"brew", "port", "gem", "conda", "mamba", "snap", "flatpak", "npm", "yarn", "pnpm", "bundle",
		"composer", "uv", "poetry":
		return c.packageManager(name, args, r)
	case "rm":
		return c.rm(args, r)
	case "dd":
		for _, a := range args {
			if strings.HasPrefix(a.v, "of=") {
				cl, why := c.writeTarget(a.v[3:], a.dyn)
				if cl == ClassLocalWrite || cl == ClassSafe || cl == ClassCodeExecution {
					return set(cl, "dd writes to "+why)
				}
				return set(maxClass(cl, ClassDestructive), "dd writes to "+why)
			}
		}
		return set(ClassSafe, "dd to stdout")
	case "shred", "wipe":
		for _, a := range args {
			if strings.HasPrefix(a.v, "/dev/") {
				return set(ClassBlocked, "destroys a device")
			}
		}
		return set(ClassDestructive, name+" destroys file contents")
	case "kill", "pkill", "killall":
		for _, a := range args {
			if a.v == "-1" && name == "kill" {
				return set(ClassBlocked, "kills every process")
			}
		}
		return set(ClassDestructive, name+" terminates processes")
	case "chmod", "chown", "chgrp":
		// chmod's modes may start with '-' (chmod -x f): they are the
		// mode operand, not options.
		var rest []word
		mode := false
		for _, a := range args {
			if name == "chmod" && !mode && isDashMode(a.v) {
				mode = true
				continue
			}
			rest = append(rest, a)
		}
		o := ownerSpec.get().scan(rest)
		if o.class != "" {
			c.raise(o.class, name, name+": "+o.why)
		}
		recursive := o.seen["-R"] || o.seen["--recursive"]
		ops := o.operands
		if len(ops) > 0 && !mode && !o.seen["--reference"] {
			ops = ops[1:] // mode or owner
		}
		for _, op := range ops {
			if recursive && c.catastrophic(op.v) {
				return set(ClassBlocked, name+" -R on "+op.v)
			}
		}
		return c.writeArgs(name, ops, r, "changes file attributes")
	case "init":
		if len(args) > 0 && (args[0].v == "0" || args[0].v == "6") {
			return set(ClassBlocked, "shuts down or reboots")
		}
		return set(ClassSystemWrite, "changes the run level")
	case "systemctl":
		for _, a := range args {
			switch a.v {
			case "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "emergency", "rescue":
				return set(ClassBlocked, "systemctl "+a.v)
			case "status", "show", "list-units", "list-unit-files", "is-active", "is-enabled", "cat":
				return set(ClassSafe, "reads service state")
			}
		}
		return set(ClassSystemWrite, "changes services")
	case "cd", "pushd":
		ops := operands(args)
		switch {
		case len(ops) == 0 || ops[0].v == "~" || ops[0].v == "/" || ops[0].v == "$HOME" || ops[0].v == "${HOME}" || ops[0].v == "~/":
			c.cwdMoved, c.cwdTop = true, true
		}
		if len(ops) > 0 && programFile(ops[0].v+"/x") != "" {
			c.cwdGit = true
		}
		if len(ops) > 0 && !ops[0].dyn {
			c.addCwd(ops[0].v)
		}
		switch {
		case len(ops) == 0:
		case ops[0].dyn || strings.HasPrefix(ops[0].v, "/") || strings.HasPrefix(ops[0].v, "~") || ops[0].v == "-" ||
			path.Clean(ops[0].v) == ".." || strings.HasPrefix(path.Clean(ops[0].v), "../"):
			if !(strings.HasPrefix(ops[0].v, "/") && c.inWorkDir(ops[0].v)) {
				c.cwdMoved = true
			}
		}
		return set(ClassSafe, "changes directory")
	case "cp", "mv", "ln", "install":
		ops := opts.operands
		if name == "ln" || name == "cp" && (opts.seen["-s"] || opts.seen["--symbolic-link"]) {
			// A link to a .git path is a second name for it, through
			// which a later write plants what git runs.
			for _, o := range append(append([]word{}, ops...), opts.writes...) {
				if o.dyn && name == "ln" {
					c.raise(ClassCodeExecution, name, "ln links a path decided at run time, which may be in .git")
				}
				if what := programFile(o.v); what != "" {
					c.raise(ClassCodeExecution, name, name+" links "+what+", and a write through the link can name a program git runs")
				}
			}
		}
		if len(opts.writes) > 0 {
			return c.writeArgs(name, opts.writes, r, name+" writes files")
		}
		targets := lastOperands(ops, 1)
		if name == "mv" || name == "install" && opts.seen["-d"] || name == "install" && opts.seen["--directory"] {
			targets = ops // mv's sources disappear too; install -d creates each
		}
		return c.writeArgs(name, targets, r, name+" writes files")
	case "mkdir", "touch", "tee", "rmdir", "mktemp":
		targets := opts.operands
		if name == "mktemp" {
			// -p DIR and --tmpdir=DIR say where the file is made.
			targets = append(append(targets, opts.vals["-p"]...), opts.vals["--tmpdir"]...)
		}
		return c.writeArgs(name, targets, r, name+" writes files")
	case "truncate":
		return set(ClassDestructive, "truncates files")
	case "curl", "wget":
		c.netExec(name, args, opts)
		r.fetch = true
		for i, a := range args {
			if (a.v == "-o" || a.v == "--output" || a.v == "-O" && name == "wget" || a.v == "--output-document") && i+1 < len(args) {
				cl, why := c.writeTarget(args[i+1].v, args[i+1].dyn)
				c.raise(cl, name, name+" saves to "+why)
			}
		}
		return set(ClassNetworkEgress, name+" contacts the network")
	}
	switch {
	case blockedPrograms.has(name):
		return set(ClassBlocked, name+" can destroy the system")
	case destructivePrograms.has(name):
		return set(ClassDestructive, name+" deletes data")
	case systemWritePrograms.has(name):
		return set(ClassSystemWrite, name+" changes system configuration")
	case installPrograms.has(name):
		return set(ClassInstall, name+" installs software")
	case interpreterPrograms.has(name):
		r.interpreter = true
		return set(ClassCodeExecution, "runs "+name+" code")
	case codePrograms.has(name):
		return set(ClassCodeExecution, name+" runs code")
	case networkPrograms.has(name):
		return set(ClassNetworkEgress, name+" contacts the network")
	case localWritePrograms.has(name):
		return c.writeArgs(name, append(opts.writes, opts.operands...), r, name+" writes files")
	case safePrograms.has(name):
		return set(ClassSafe, name+" only reads")
	}
	return set(ClassUnknown, "unrecognised program "+name)
}

// gitSubIndex returns the index of git's subcommand in args, len(args)
// when there is none.
func gitSubIndex(args []word) int {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].v, "-") {
		if args[i].v == "-c" || args[i].v == "--config-env" || gitGlobalOptsWithArg[args[i].v] {
			i++
		}
		i++
	}
	return i
}

// extractWhy is why extracting an archive is code_execution: the
// classifier cannot see the members, and one may be .git/config, a hook,
// .gitattributes or a symlink to them.
func extractWhy(name string) string {
	return name + " extracts files the archive names, which may plant .git/config, a hook or .gitattributes that git runs programs from"
}

// writeArgs classifies a command that writes to each of targets; it is at
// least local_write.
func (c *classifier) writeArgs(name string, targets []word, r segResult, why string) segResult {
	best, bestWhy := ClassLocalWrite, why
	for _, t := range targets {
		cl, tw := c.writeTarget(t.v, t.dyn)
		if Severity(cl) > Severity(best) {
			best, bestWhy = cl, why+" to "+tw
		}
	}
	r.reason = bestWhy
	c.raise(best, name, bestWhy)
	return r
}

// operands returns the non-option arguments (everything after "--").
func operands(args []word) []word {
	var out []word
	dashdash := false
	for _, a := range args {
		if !dashdash && a.v == "--" {
			dashdash = true
			continue
		}
		if !dashdash && strings.HasPrefix(a.v, "-") && a.v != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

func lastOperands(args []word, n int) []word {
	ops := operands(args)
	if len(ops) > n {
		return ops[len(ops)-n:]
	}
	return ops
}

func firstOperand(args []word) string {
	for _, a := range args {
		if !strings.HasPrefix(a.v, "-") {
			return a.v
		}
	}
	return ""
}

func maxClass(a, b Class) Class {
	if Severity(b) > Severity(a) {
		return b
	}
	return a
}

// catastrophic reports whether deleting p recursively would wipe the
// system or the home directory.
func (c *classifier) catastrophic(p string) bool {
	q := strings.TrimSuffix(p, "*")
	for _, home := range [...]string{"~", "$HOME", "${HOME}"} {
		if q == home || q == home+"/" {
			return true
		}
	}
	if c.cwdTop && (q == "" || q == "." || q == "./") {
		return true
	}
	if !strings.HasPrefix(q, "/") {
		return false
	}
	cl := path.Clean(q)
	// "/", or a top-level directory such as /etc or /usr.
	return cl == "/" || strings.Count(cl, "/") == 1
}

func (c *classifier) rm(args []word, r segResult) segResult {
	recursive := false
	dashdash := false
	for _, a := range args {
		if a.v == "--" {
			dashdash = true
			continue
		}
		if dashdash || !strings.HasPrefix(a.v, "-") {
			continue
		}
		if a.v == "--recursive" || !strings.HasPrefix(a.v, "--") && strings.ContainsAny(a.v, "rR") {
			recursive = true
		}
	}
	for _, o := range operands(args) {
		if recursive && c.catastrophic(o.v) {
			r.reason = "rm -r on " + o.v
			c.raise(ClassBlocked, "rm", r.reason)
			return r
		}
	}
	r.reason = "rm deletes files"
	c.raise(ClassDestructive, "rm", r.reason)
	return r
}

func (c *classifier) find(args []word, r segResult) segResult {
	class, why := ClassSafe, "find only lists files"
	for i := 0; i < len(args); i++ {
		switch args[i].v {
		case "-delete":
			class, why = maxClass(class, ClassDestructive), "find -delete deletes files"
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].v != ";" && args[j].v != "+" {
				j++
			}
			inner := args[i+1 : j]
			if len(inner) > 0 && (inner[0].dyn || strings.Contains(inner[0].v, "{}")) {
				c.raise(ClassCodeExecution, "find", "find "+args[i].v+" runs a program decided at run time")
			}
			if len(inner) == 0 {
				class, why = maxClass(class, ClassUnknown), "find "+args[i].v+" without a command"
			}
			sub := &classifier{workDir: c.workDir, depth: c.depth + 1, cwdMoved: c.cwdMoved, cwdTop: c.cwdTop, cwdGit: c.cwdGit, cwds: c.cwds, gitUse: c.gitUse}
			sub.best = ShellVerdict{Class: ClassSafe}
			sub.command(inner)
			c.raise(sub.best.Class, sub.best.Argv0, "find "+args[i].v+": "+sub.best.Reason)
			i = j
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				cl, w := c.writeTarget(args[i+1].v, args[i+1].dyn)
				if Severity(cl) > Severity(class) {
					class, why = cl, "find writes to "+w
				}
			}
		}
	}
	r.reason = why
	c.raise(class, "find", why)
	return r
}

// gitGlobalOptsWithArg consume the next word before the subcommand.
var gitGlobalOptsWithArg = map[string]bool{"-C": true, "--git-dir": true, "--work-tree": true, "--namespace": true, "--exec-path": true}

func (c *classifier) git(args []word, r segResult) segResult {
	set := func(class Class, why string) segResult {
		r.reason = why
		c.raise(class, "git", why)
		return r
	}
	for j, a := range args {
		if a.v == "--help" || a.v == "help" && j == gitSubIndex(args) {
			// The repository's man.viewer and man.<tool>.cmd come before
			// man, and no environment setting can put man first.
			c.raise(ClassCodeExecution, "git", "git help runs a man viewer the repository's configuration can name")
			break
		}
	}
	i := 0
	// Where git starts: each directory the line may be in, moved by -C
	// (and the directory above a --git-dir, where its worktree is).
	starts := c.currentDirs()
	for i < len(args) && strings.HasPrefix(args[i].v, "-") {
		if move, ok := gitStartOption(args, i); ok {
			if move.dyn {
				c.raise(ClassCodeExecution, "git", "git "+args[i].v+" names a directory decided at run time, whose repository cannot be inspected")
			} else {
				starts = moveDirs(starts, move.v, c.workDir)
			}
		}
		if strings.HasPrefix(args[i].v, "-c") || strings.HasPrefix(args[i].v, "--config-env") {
			// Configuration on the command line can name programs to run.
			c.raise(ClassCodeExecution, "git", "git -c can run configured programs")
			if args[i].v == "-c" || args[i].v == "--config-env" {
				i++
			}
			i++
			continue
		}
		if gd, ok := strings.CutPrefix(args[i].v, "--git-dir="); ok || args[i].v == "--git-dir" && i+1 < len(args) {
			if !ok {
				gd = args[i+1].v
			}
			if !strings.EqualFold(path.Base(path.Clean(gd)), ".git") {
				c.raise(ClassCodeExecution, "git", "git --git-dir names a repository by another name than .git, whose config the classifier does not watch")
			}
		}
		if strings.HasPrefix(args[i].v, "--exec-path=") || args[i].dyn {
			c.raise(ClassCodeExecution, "git", "git "+quoteArg(args[i].v)+" runs git commands from another directory")
		}
		if gitGlobalOptsWithArg[args[i].v] {
			i++
		}
		i++
	}
	if c.gitUse != nil {
		c.gitUse.dirs = append(c.gitUse.dirs, starts...)
	}
	if i >= len(args) {
		return set(ClassSafe, "git without a subcommand")
	}
	sub, rest := args[i].v, args[i+1:]
	if sub == "init" || sub == "clone" {
		for _, a := range rest {
			if strings.HasPrefix(a.v, "--separate-git-dir") {
				c.raise(ClassCodeExecution, "git", "git "+sub+" --separate-git-dir puts the repository's config where the classifier does not watch it")
			}
		}
	}
	if why := gitRuns(sub, rest); why != "" {
		c.raise(ClassCodeExecution, "git", why)
	}
	for j, a := range rest {
		if strings.HasPrefix(a.v, "--output=") {
			cl, w := c.writeTarget(a.v[len("--output="):], a.dyn)
			c.raise(cl, "git", "git "+sub+" writes to "+w)
		} else if a.v == "--output" && j+1 < len(rest) {
			cl, w := c.writeTarget(rest[j+1].v, rest[j+1].dyn)
			c.raise(cl, "git", "git "+sub+" writes to "+w)
		} else if sub == "archive" || sub == "format-patch" {
			// archive -o FILE, format-patch -o DIR (also -oX, and
			// format-patch's --output-directory): the review of issue 21
			// wrote a tar over ../../x with `git archive -o`, rated safe.
			target, ok := "", false
			switch {
			case a.v == "-o" || a.v == "--output-directory" || a.v == "--o":
				if j+1 < len(rest) {
					target, ok = rest[j+1].v, true
				}
			case strings.HasPrefix(a.v, "--output-directory="):
				target, ok = a.v[len("--output-directory="):], true
			case strings.HasPrefix(a.v, "-o") && len(a.v) > 2:
				target, ok = a.v[2:], true
			}
			if ok {
				cl, w := c.writeTarget(target, a.dyn || j+1 < len(rest) && rest[j+1].dyn)
				c.raise(cl, "git", "git "+sub+" writes to "+w)
			}
		}
	}
	has := func(flags ...string) bool {
		for _, a := range rest {
			for _, f := range flags {
				if a.v == f {
					return true
				}
			}
		}
		return false
	}
	switch sub {
	case "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "grep", "describe",
		"shortlog", "reflog", "cat-file", "ls-tree", "whatchanged", "rev-list", "merge-base",
		"name-rev", "version", "help", "check-ignore", "show-ref", "for-each-ref", "count-objects":
		return set(ClassSafe, "git "+sub+" only reads")
	case "branch", "tag", "remote", "stash", "worktree", "config":
		if len(rest) == 0 || has("-l", "--list", "-v", "-vv", "-a", "-r", "--show-current", "show", "list", "--get", "--get-all", "--list") && !has("-D", "-d", "--delete", "drop", "clear", "remove", "rm", "prune") {
			return set(ClassSafe, "git "+sub+" lists")
		}
		if has("-D", "--delete", "drop", "clear") && (sub == "branch" || sub == "stash") {
			return set(ClassDestructive, "git "+sub+" deletes work")
		}
		if sub == "remote" && has("update") {
			return set(ClassNetworkEgress, "git remote update fetches")
		}
		if sub == "config" && has("--global", "--system") {
			return set(ClassSystemWrite, "git config outside the repository")
		}
		return set(ClassLocalWrite, "git "+sub+" changes the repository")
	case "add", "commit", "init", "mv", "switch", "merge", "rebase", "cherry-pick", "revert", "am",
		"apply", "notes", "rm", "bisect", "fmt-merge-msg", "update-index", "sparse-checkout":
		if sub == "rebase" && has("--exec", "-x") {
			return set(ClassCodeExecution, "git rebase --exec runs commands")
		}
		return set(ClassLocalWrite, "git "+sub+" changes the repository")
	case "checkout", "restore":
		if has("-f", "--force", ".", "--", "--worktree", "-W") && sub == "checkout" && has(".", "--", "-f", "--force") || sub == "restore" {
			return set(ClassDestructive, "git "+sub+" discards uncommitted changes")
		}
		return set(ClassLocalWrite, "git "+sub+" switches branches")
	case "reset":
		if has("--hard", "--merge", "--keep") {
			return set(ClassDestructive, "git reset --hard discards uncommitted changes")
		}
		return set(ClassLocalWrite, "git reset moves HEAD")
	case "clean":
		if has("-n", "--dry-run") {
			return set(ClassSafe, "git clean dry run")
		}
		return set(ClassDestructive, "git clean deletes untracked files")
	case "gc", "prune", "filter-branch", "filter-repo", "reflog-expire":
		return set(ClassDestructive, "git "+sub+" can drop history")
	case "push", "pull", "fetch", "clone", "ls-remote", "submodule", "send-email", "request-pull", "archive":
		if sub == "push" && has("--force", "-f", "--mirror", "--delete", "-d") {
			return set(ClassDestructive, "git push rewrites or deletes remote history")
		}
		if sub == "archive" && !has("--remote") {
			return set(ClassSafe, "git archive to stdout")
		}
		return set(ClassNetworkEgress, "git "+sub+" contacts a remote")
	}
	return set(ClassUnknown, "unrecognised git subcommand "+sub)
}

func (c *classifier) goTool(args []word, r segResult) segResult {
	set := func(class Class, why string) segResult {
		r.reason = why
		c.raise(class, "go", why)
		return r
	}
	sub := firstOperand(args)
	switch sub {
	case "run", "test", "build", "generate", "vet", "tool", "fix":
		return set(ClassCodeExecution, "go "+sub+" compiles and runs code")
	case "install", "get":
		return set(ClassInstall, "go "+sub+" installs packages")
	case "mod":
		for _, a := range args {
			switch a.v {
			case "download", "tidy", "vendor":
				return set(ClassNetworkEgress, "go mod "+a.v+" downloads modules")
			case "init", "edit":
				return set(ClassLocalWrite, "go mod "+a.v+" edits go.mod")
			case "graph", "why", "verify":
				return set(ClassSafe, "go mod "+a.v+" reads")
			}
		}
		return set(ClassUnknown, "unrecognised go mod subcommand")
	case "fmt":
		return set(ClassLocalWrite, "go fmt rewrites files")
	case "version", "env", "list", "doc", "help":
		for _, a := range args {
			if strings.HasPrefix(a.v, "-toolexec") || strings.HasPrefix(a.v, "--toolexec") || strings.HasPrefix(a.v, "-exec") {
				return set(ClassCodeExecution, "go "+sub+" "+quoteArg(a.v)+" runs a program")
			}
		}
		if sub == "env" {
			for _, a := range args {
				if a.v == "-w" || a.v == "-u" {
					return set(ClassSystemWrite, "go env -w changes user configuration")
				}
			}
		}
		return set(ClassSafe, "go "+sub+" reads")
	case "work":
		return set(ClassLocalWrite, "go work edits go.work")
	case "clean":
		return set(ClassDestructive, "go clean deletes caches")
	}
	return set(ClassUnknown, "unrecognised go subcommand "+sub)
}

// packageManager classifies pip/npm/apt-style tools: queries are safe,
// script runners execute code, the rest installs.
func (c *classifier) packageManager(name string, args []word, r segResult) segResult {
	set := func(class Class, why string) segResult {
		r.reason = why
		c.raise(class, name, why)
		return r
	}
	sub := firstOperand(args)
	switch sub {
	case "list", "ls", "show", "info", "search", "freeze", "view", "outdated", "why", "help",
		"config", "policy", "--version", "-v", "version", "check", "doctor", "audit", "explain", "inspect":
		if sub == "config" {
			for _, a := range args {
				if a.v == "set" || a.v == "delete" {
					return set(ClassSystemWrite, name+" config changes user configuration")
				}
			}
		}
		return set(ClassSafe, name+" "+sub+" reads package metadata")
	case "run", "run-script", "test", "start", "exec", "x", "dlx", "restart", "stop":
		return set(ClassCodeExecution, name+" "+sub+" runs project scripts")
	case "":
		if name == "yarn" || name == "bundle" || name == "composer" {
			return set(ClassInstall, name+" installs dependencies")
		}
		return set(ClassSafe, name+" without a subcommand prints help")
	}
	return set(ClassInstall, name+" "+sub+" installs or changes packages")
}

// isForkBomb spots the classic :(){ :|:& };: shape under any name.
func isForkBomb(s string) bool {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
			b.WriteByte(s[i])
		}
	}
	t := b.String()
	for off := 0; ; {
		k := strings.Index(t[off:], "(){")
		if k < 0 {
			return false
		}
		k += off
		j := k
		for j > 0 && !strings.ContainsRune(";&|(){}\n", rune(t[j-1])) {
			j--
		}
		name := t[j:k]
		if name != "" && strings.Contains(t[k:], name+"|"+name+"&") {
			return true
		}
		off = k + 3
	}
}

// hasWord reports whether args holds the static word w.
func hasWord(args []word, w string) bool {
	for _, a := range args {
		if a.v == w && !a.dyn {
			return true
		}
	}
	return false
}
