package tools

import (
	"sort"
	"strings"
)

// This file holds the option tables of the programs whose class depends
// on their options, and the one scanner that reads a command's arguments
// against them the way getopt_long does: "--" ends the options, long
// options are --name=value or --name value and may be abbreviated to any
// prefix, short options bundle (-xvfI prog, -Iprog), GNU programs permute
// options and operands, and tar's first word may be a bundle without a
// dash whose arguments follow in order.
//
// A program that can run another program through an option (tar -I,
// sort --compress-program, zip -TT, ...) is code_execution whenever such
// an option appears, in any spelling: a long option is taken to be every
// option it is a prefix of, so an abbreviation is never read as something
// milder. For the programs whose table is an allowlist (the ones that write
// files), an option not in the table makes the command unknown, never
// local_write. A word decided at run time ($X, "$(...)", a glob such as
// *) that is not behind "--" may itself become such an option, so it
// counts as one for a program that has any.
//
// The tables list option names, which are facts of each program's
// interface; the catalogue in testdata/exec_catalogue.txt says where each
// program-running option was found, and TestExecCatalogue checks every
// entry.

// optKind says what an option does with its argument.
type optKind uint8

const (
	optFlag       optKind = iota // takes no argument
	optArg                       // takes an argument, attached or the next word
	optOptArg                    // takes an argument only when attached (--x=v, -xv)
	optExec                      // its argument names a program, script or filter the program runs
	optExecOpt                   // like optExec, but the argument is optional and attached (man -H/bin/sh)
	optWrite                     // its argument is a file the program writes
	optScript                    // its argument is program text (awk -e, sed -e)
	optScriptFile                // its argument is a file the program reads as code or options (awk -f, tar -T)
	optCmd                       // its argument is a shell command line the program runs (env -S, flock -c)
	optOutside                   // a flag that makes the program write outside the working directory (tar -P)
	optDelete                    // a flag that makes the program delete its inputs (tar --remove-files)
)

// takesArg reports whether an option of kind k consumes the next word when
// its argument is not attached.
func (k optKind) takesArg() bool {
	switch k {
	case optArg, optExec, optWrite, optScript, optScriptFile, optCmd:
		return true
	}
	return false
}

// runs reports whether an option of kind k makes the program run a
// program or code named by the command line.
func (k optKind) runs() bool {
	return k == optExec || k == optExecOpt || k == optScriptFile || k == optCmd
}

// optSpec is one program's option table.
type optSpec struct {
	short map[byte]optKind
	long  map[string]optKind
	// longNames is long's keys, sorted, for prefix matching.
	longNames []string
	// allow makes the table an allowlist: an option not in it is unknown.
	allow bool
	// stop ends the options at the first operand (wrappers: what follows
	// is the command).
	stop bool
	// oldStyle reads a first word without '-' as a bundle of short
	// options whose arguments follow in order (tar cvfI a.tar prog).
	oldStyle bool
	// hasExec is set when some option runs a program.
	hasExec bool
}

// specFlags modify newSpec.
type specFlags uint8

const (
	allowlist specFlags = 1 << iota
	stopAtOperand
	oldStyle
)

// kindOf maps the one-character suffix of a table token to its kind.
var kindOf = map[byte]optKind{
	'=': optArg, '?': optOptArg, '!': optExec, '*': optExecOpt, '>': optWrite,
	'~': optScript, '@': optScriptFile, '$': optCmd, '^': optOutside, '-': optDelete,
}

// newSpec builds a table. short holds space-separated tokens: a token of
// letters without a suffix is a set of flags ("xvz"), a letter with a
// suffix is one option of that kind ("f>", "I!"); long holds names, each
// with an optional suffix ("file>", "to-command!", "verbose"). Suffixes:
// = argument, ? optional attached argument, ! program, * optional attached
// program, > file written, ~ program text, @ file read as code, $ shell
// command line, ^ writes outside the working directory, - deletes inputs.
func newSpec(short, long string, flags specFlags) *optSpec {
	s := &optSpec{short: map[byte]optKind{}, long: map[string]optKind{},
		allow: flags&allowlist != 0, stop: flags&stopAtOperand != 0, oldStyle: flags&oldStyle != 0}
	for _, t := range strings.Fields(short) {
		if k, ok := kindOf[t[len(t)-1]]; ok && len(t) == 2 {
			s.short[t[0]] = k
			continue
		}
		for i := 0; i < len(t); i++ {
			s.short[t[i]] = optFlag
		}
	}
	for _, t := range strings.Fields(long) {
		k := optFlag
		if kk, ok := kindOf[t[len(t)-1]]; ok {
			k, t = kk, t[:len(t)-1]
		}
		s.long[t] = k
	}
	for n, k := range s.long {
		s.longNames = append(s.longNames, n)
		s.hasExec = s.hasExec || k.runs()
	}
	for _, k := range s.short {
		s.hasExec = s.hasExec || k.runs()
	}
	sort.Strings(s.longNames)
	return s
}

// resolveLong finds the long option name stands for: itself, else every
// option it is a prefix of. If one of those runs a program, that one;
// else the only one; else none (ok false).
func (s *optSpec) resolveLong(name string) (full string, k optKind, ok bool) {
	if k, ok := s.long[name]; ok {
		return name, k, true
	}
	if name == "" {
		return "", 0, false
	}
	i := sort.SearchStrings(s.longNames, name)
	var cands []string
	for ; i < len(s.longNames) && strings.HasPrefix(s.longNames[i], name); i++ {
		cands = append(cands, s.longNames[i])
	}
	for _, n := range cands {
		if s.long[n].runs() {
			return n, s.long[n], true
		}
	}
	if len(cands) == 1 {
		return cands[0], s.long[cands[0]], true
	}
	return "", 0, false
}

// looksRunning reports whether the static word w, read as an option of s,
// would run a program. It guards option arguments: when the table has an
// option's arity wrong, the word it swallowed is still checked.
func (s *optSpec) looksRunning(w word) bool {
	if w.dyn || len(w.v) < 2 || w.v[0] != '-' {
		return false
	}
	if strings.HasPrefix(w.v, "--") {
		name, _, _ := strings.Cut(w.v[2:], "=")
		_, k, ok := s.resolveLong(name)
		return ok && k.runs()
	}
	for i := 1; i < len(w.v); i++ {
		if k, ok := s.short[w.v[i]]; ok && k.runs() {
			return true
		}
	}
	return false
}

// optResult is what a scan found.
type optResult struct {
	operands []word
	// Arguments of options, by what the program does with them.
	writes, scripts, scriptFiles, cmds []word
	// seen holds the options present: "-x" for a letter, "--name" for a
	// long option under its full name; vals their arguments.
	seen map[string]bool
	vals map[string][]word
	// class and why are the most severe finding of the options themselves
	// ("" when none).
	class Class
	why   string
}

func (r *optResult) mark(opt string) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[opt] = true
}

func (r *optResult) raise(class Class, why string) {
	if r.class == "" || Severity(class) > Severity(r.class) {
		r.class, r.why = class, why
	}
}

// scan reads args against s.
func (s *optSpec) scan(args []word) *optResult {
	r := &optResult{}
	apply := func(opt string, k optKind, v word, separate bool) {
		if r.vals == nil {
			r.vals = map[string][]word{}
		}
		r.vals[opt] = append(r.vals[opt], v)
		if separate && s.looksRunning(v) {
			r.raise(ClassCodeExecution, opt+" takes "+v.v+", which would run a program if it were an option")
		}
		switch k {
		case optExec:
			r.raise(ClassCodeExecution, opt+" runs "+quoteArg(v.v))
		case optExecOpt:
			if v.v != "" {
				r.raise(ClassCodeExecution, opt+" runs "+quoteArg(v.v))
			}
		case optWrite:
			r.writes = append(r.writes, v)
		case optScript:
			r.scripts = append(r.scripts, v)
		case optScriptFile:
			r.scriptFiles = append(r.scriptFiles, v)
		case optCmd:
			r.cmds = append(r.cmds, v)
		}
	}
	flag := func(opt string, k optKind) {
		switch k {
		case optOutside:
			r.raise(ClassSystemWrite, opt+" writes outside the working directory")
		case optDelete:
			r.raise(ClassDestructive, opt+" deletes files")
		}
	}
	unknown := func(opt string) {
		if s.allow {
			r.raise(ClassUnknown, "unrecognised option "+opt)
		}
	}
	i := 0
	if s.oldStyle && len(args) > 0 && args[0].v != "" && args[0].v[0] != '-' && !args[0].dyn && s.allShort(args[0].v) {
		b := args[0].v
		i = 1
		for j := 0; j < len(b); j++ {
			opt := "-" + b[j:j+1]
			k := s.short[b[j]]
			r.mark(opt)
			if k.takesArg() {
				var v word
				if i < len(args) {
					v = args[i]
					i++
				}
				apply(opt, k, v, true)
				continue
			}
			flag(opt, k)
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		if a.v == "--" && !a.dyn {
			r.operands = append(r.operands, args[i+1:]...)
			break
		}
		if len(a.v) < 2 || a.v[0] != '-' {
			if a.mayOpt && s.hasExec {
				r.raise(ClassCodeExecution, quoteArg(a.v)+" is decided at run time and may be an option that runs a program")
			}
			r.operands = append(r.operands, a)
			if s.stop {
				r.operands = append(r.operands, args[i+1:]...)
				break
			}
			continue
		}
		if (a.dyn || a.mayOpt) && s.hasExec {
			r.raise(ClassCodeExecution, "the option "+quoteArg(a.v)+" is decided at run time and may run a program")
		}
		if strings.HasPrefix(a.v, "--") {
			name, val, hasVal := strings.Cut(a.v[2:], "=")
			full, k, ok := s.resolveLong(name)
			if !ok {
				unknown("--" + name)
				continue
			}
			opt := "--" + full
			r.mark(opt)
			switch {
			case k == optOptArg || k == optExecOpt:
				if hasVal {
					apply(opt, k, word{v: val, dyn: a.dyn}, false)
				}
			case k.takesArg():
				switch {
				case hasVal:
					apply(opt, k, word{v: val, dyn: a.dyn}, false)
				case i+1 < len(args):
					i++
					apply(opt, k, args[i], true)
				default:
					apply(opt, k, word{}, false)
				}
			default:
				flag(opt, k)
			}
			continue
		}
		for j := 1; j < len(a.v); j++ {
			opt := "-" + a.v[j:j+1]
			k, ok := s.short[a.v[j]]
			if !ok {
				// Its arity is unknown: read the rest as letters too,
				// which can only find more.
				unknown(opt)
				continue
			}
			r.mark(opt)
			if k == optOptArg || k == optExecOpt {
				apply(opt, k, word{v: a.v[j+1:], dyn: a.dyn}, false)
				break
			}
			if k.takesArg() {
				switch {
				case j+1 < len(a.v):
					apply(opt, k, word{v: a.v[j+1:], dyn: a.dyn}, false)
				case i+1 < len(args):
					i++
					apply(opt, k, args[i], true)
				default:
					apply(opt, k, word{}, false)
				}
				break
			}
			flag(opt, k)
		}
	}
	return r
}

// allShort reports whether every byte of b is a short option of s.
func (s *optSpec) allShort(b string) bool {
	for i := 0; i < len(b); i++ {
		if _, ok := s.short[b[i]]; !ok {
			return false
		}
	}
	return true
}

// quoteArg shortens an argument for a reason string.
func quoteArg(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "…"
	}
	return "'" + s + "'"
}

// optSpecs are the option tables of programs classified by their options.
// Wrappers have theirs in wrappers.
var optSpecs = &lazy[map[string]*optSpec]{build: newOptSpecs}

func newOptSpecs() map[string]*optSpec {
	return map[string]*optSpec{
		// GNU tar and bsdtar. -T/--files-from is a file read as code: GNU tar
		// takes lines starting with '-' in it as options unless
		// --verbatim-files-from is given.
		"tar": newSpec("AcdrtuxGnSkUWOmpsMBiajJzZhlRwvoqy f> C> g> K= L= N= T@ V= X= b= H= F! I! P^",
			`absolute-names^ acls add-file= after-date= anchored append atime-preserve? auto-compress backup?
		block-number blocking-factor= bzip2 catenate check-device check-links checkpoint? checkpoint-action!
		clamp-mtime compare compress concatenate confirmation create delay-directory-restore delete
		dereference diff directory> exclude= exclude-backups exclude-caches exclude-caches-all
		exclude-caches-under exclude-from= exclude-ignore= exclude-ignore-recursive= exclude-tag=
		exclude-tag-all= exclude-tag-under= exclude-vcs exclude-vcs-ignores extract file> files-from@
		force-local format= full-time get group= group-map= gunzip gzip hard-dereference help
		hole-detection= ignore-case ignore-command-error ignore-failed-read ignore-zeros incremental
		index-file> info-script! interactive keep-directory-symlink keep-newer-files keep-old-files label=
		level= list listed-incremental> lzip lzma lzop mode= mtime= multi-volume new-volume-script! newer=
		newer-mtime= no-acls no-anchored no-auto-compress no-check-device no-delay-directory-restore
		no-ignore-case no-ignore-command-error no-null no-overwrite-dir no-quote-chars= no-recursion
		no-same-owner no-same-permissions no-seek no-selinux no-unquote no-verbatim-files-from
		no-wildcards no-wildcards-match-slash no-xattrs null numeric-owner occurrence? old-archive
		one-file-system one-top-level? overwrite overwrite-dir owner= owner-map= pax-option= portability
		posix preserve-order preserve-permissions quote-chars= quoting-style= read-full-records
		record-size= recursion recursive-unlink remove-files- restrict rmt-command! rsh-command! same-order
		same-owner same-permissions seek selinux show-defaults show-omitted-dirs
		show-snapshot-field-ranges show-stored-names show-transformed-names skip-old-files sort= sparse
		sparse-version= starting-file= strip-components= suffix= tape-length= test-label to-command!
		to-stdout totals? touch transform= uncompress ungzip unlink-first unquote update usage
		use-compress-program! utc verbatim-files-from verbose verify version volno-file> warning=
		wildcards wildcards-match-slash xattrs xattrs-exclude= xattrs-include= xform= xz zstd
		uid= gid= uname= gname= include= newer-than= newer-mtime-than= older= older-mtime= older-than=
		options= passphrase= insecure^ chroot fast-read norecurse nodump no-fflags fflags no-mac-metadata
		mac-metadata safe-writes no-safe-writes lrzip lz4 grzip b64encode uuencode read-sparse
		no-read-sparse disable-copyfile ignore-zeros`, allowlist|oldStyle),
		// Info-ZIP zip has its own table, zipSpec, read by (*classifier).zip.
		"unzip": newSpec("abBcCDfjJKlLMnNoopqsStTuUvVWXxzZ0123456789:^ d> P= O= I= x=", "", allowlist),
		"sort": newSpec("bcCdfghiMmnrRsuVz k= o> S= t= T=",
			`batch-size= buffer-size= check? compress-program! debug dictionary-order field-separator=
		files0-from= general-numeric-sort help human-numeric-sort ignore-case ignore-leading-blanks
		ignore-nonprinting key= merge month-sort numeric-sort output> parallel= random-sort random-source=
		reverse sort= stable temporary-directory= unique version version-sort zero-terminated`, allowlist),
		"sed": newSpec("nErsuzb i? l= e~ f@",
			`debug expression~ file@ follow-symlinks help in-place? line-length= null-data zero-terminated
		posix quiet regexp-extended sandbox separate silent unbuffered version binary`, allowlist),
		"split": newSpec("deux a= b= C= l= n= t=",
			`additional-suffix= bytes= elide-empty-files filter! help hex-suffixes? line-bytes= lines= number=
		numeric-suffixes? separator= suffix-length= unbuffered verbose version`, allowlist),
		"install": newSpec("bcCdDpsTvZ g= m= o= S= t>",
			`backup? compare context? directory group= help mode= no-target-directory owner=
		preserve-context preserve-timestamps strip strip-program! suffix= target-directory> verbose version
		debug`, allowlist),
		"cp": newSpec("abdfHilLnPprRsTuvxZ S= t>",
			`archive attributes-only backup? copy-contents dereference force help interactive link no-clobber
		no-dereference no-preserve= no-target-directory one-file-system parents preserve? recursive
		reflink? remove-destination sparse= strip-trailing-slashes suffix= symbolic-link target-directory>
		update? verbose version context? debug keep-directory-symlink`, allowlist),
		"mv": newSpec("bfintTuvZ S= t>",
			`backup? context force help interactive no-clobber no-target-directory strip-trailing-slashes
		suffix= target-directory> update? verbose version debug exchange no-copy`, allowlist),
		"ln": newSpec("bdFfiLnPrsTv S= t>",
			`backup? directory force help interactive logical no-dereference no-target-directory physical
		relative suffix= symbolic target-directory> verbose version`, allowlist),
		"mkdir": newSpec("pvZ m=", "context? help mode= parents verbose version", allowlist),
		"touch": newSpec("acfhm d= r= t=", "date= help no-create no-dereference reference= time= version", allowlist),
		"tee":   newSpec("aip", "append help ignore-interrupts output-error? version", allowlist),
		"rmdir": newSpec("pv", "help ignore-fail-on-non-empty parents verbose version", allowlist),
		"mktemp": newSpec("dqtu p=",
			"directory dry-run help quiet suffix= tmpdir? version", allowlist),
		"patch": newSpec("bcEefNlnRsTtuvZ B> D= F= V= Y= d> g= i= o> p= r> z=",
			`backup backup-if-mismatch binary context directory> dry-run ed force forward fuzz= get= help
		ifdef= ignore-whitespace input= merge? no-backup-if-mismatch normal output> posix prefix>
		basename-prefix= quiet quoting-style= read-only= reject-file> reject-format= remove-empty-files
		reverse set-time set-utc silent strip= suffix= unified verbose version version-control=
		follow-symlinks batch`, allowlist),
		"gzip": newSpec("0123456789cdfhkLlNnqrtvV S=",
			`best decompress fast force help keep license list name no-name quiet recursive rsyncable stdout
		to-stdout suffix= synchronous test verbose version uncompress`, allowlist),
		"xz": newSpec("0123456789cdefhHklqtvVzQ C= F= M= S= T=",
			`compress decompress uncompress extreme force help keep list long-help quiet stdout to-stdout test
		threads= verbose version check= format= memlimit= memory= memlimit-compress=
		memlimit-decompress= memlimit-mt-decompress= suffix= files? files0? single-stream no-sparse
		no-adjust no-warn robot info-memory block-size= block-list= flush-timeout= ignore-check lzma1?
		lzma2? x86? arm? arm64? armthumb? powerpc? ia64? sparc? riscv? delta? filters= filters-help
		filters1= filters2= filters3= filters4= filters5= filters6= filters7= filters8= filters9=`, allowlist),
		"bzip2": newSpec("123456789cdfhkLqstvVz",
			"best compress decompress fast force help keep license quiet small stdout test verbose version repetitive-best repetitive-fast", allowlist),
		// Programs that are not write-class: only their program-running
		// options are listed (no allowlist).
		"awk": newSpec("bcCdDgIkMnNOPrsStVhy F= v= W= f@ e~ E@ i@ l@ o? p? L? d? D?",
			`field-separator= assign= file@ source~ exec@ include@ load@ sandbox characters-as-bytes
		traditional copyright dump-variables? debug? gen-pot help lint? bignum use-lc-numeric
		non-decimal-data optimize profile? pretty-print? posix re-interval no-optimize lint-old version
		csv trace`, 0),
		"less": newSpec("k@ o> O> b= h= j= p= P= t= T= x= y= z= D=",
			`lesskey-file@ lesskey-src@ lesskey-content~ log-file> LOG-FILE> tag= tag-file= prompt= pattern=
		buffers= max-back-scroll= max-forw-scroll= jump-target= tabs= window= shift=`, 0),
		"more": newSpec("n= ", "lines=", 0),
		"man": newSpec("acdDfFhikKlRtuVwWZ7 C@ P! H* M= m= L= S= s= e= p= r= E= R= T? X?",
			`config-file@ pager! html* manpath= systems= locale= sections= extension= preprocessor= prompt=
		encoding= recode= troff-device? gxditview? ascii catman debug default whatis apropos regex
		wildcard names-only all update no-subpages no-hyphenation no-justification local-file where
		path location where-cat location-cat help usage version ditroff troff`, 0),
		"rg":      newSpec("", "pre! pre-glob=", 0),
		"ag":      newSpec("", "pager!", 0),
		"mosh":    newSpec("", "client! server! ssh!", 0),
		"ssh":     newSpec("46AaCfGgKkMNnqsTtVvXxYy B= b= c= D= E> e= F@ I! i= J= L= l= m= O= o= p= Q= R= S= W= w=", "", 0),
		"scp":     newSpec("346ABCOpqRrTv c= D! F@ i= J= l= o= P= S! X=", "", 0),
		"sftp":    newSpec("46AaCfNpqrv B= b@ c= D! F@ i= J= l= o= P= R= S! X=", "", 0),
		"rsync":   newSpec("e! B= f= M= T= @=", "rsh! rsync-path! remote-option= config@ log-file> write-batch> only-write-batch>", 0),
		"wget":    newSpec("e= ", "use-askpass! config@ execute=", 0),
		"aria2c":  newSpec("", "conf-path@", 0),
		"nc":      newSpec("e! c! p= s= w= i= q= x= X= I= O= P= T= V= b= g= G= M= m=", "exec! sh-exec! lua-exec!", 0),
		"tcpdump": newSpec("z! B= c= C= E= F= G= i= j= M= m= r= s= T= w> W= y= Z=", "relinquish-privileges= time-stamp-type=", 0),
		"cpio":    newSpec("F= H= I= O= R= E= M= C= W=", "rsh-command! rmt-command! file= format= owner= pattern-file=", 0),
	}
}

// ownerSpec is the table of chmod, chown and chgrp.
var ownerSpec = &lazySpec{short: "cfvRhHLP", long: `changes silent quiet verbose no-preserve-root preserve-root reference=
	recursive dereference no-dereference from= help version`, flags: allowlist}

// isDashMode reports whether v is a chmod mode that starts with '-' (-x,
// -rw, -w,+x).
func isDashMode(v string) bool {
	if len(v) < 2 || v[0] != '-' {
		return false
	}
	for i := 1; i < len(v); i++ {
		if strings.IndexByte("rwxXstugoa+-=,0123456789", v[i]) < 0 {
			return false
		}
	}
	return true
}

// specFor returns the table of program name, after aliases.
func specFor(name string) *optSpec {
	switch name {
	case "bsdtar", "gtar":
		name = "tar"
	case "gawk", "mawk", "nawk":
		name = "awk"
	case "gunzip":
		name = "gzip"
	case "unxz", "lzma", "unlzma":
		name = "xz"
	case "bunzip2":
		name = "bzip2"
	case "slogin":
		name = "ssh"
	case "ncat", "netcat":
		name = "nc"
	case "gsplit":
		name = "split"
	}
	return optSpecs.get()[name]
}

// execVarSuffixes end the names of variables that name a program to run
// (GIT_PAGER, SYSTEMD_EDITOR, SSH_ASKPASS, RSYNC_CONNECT_PROG, ...) or
// options a program reads from the environment (TAR_OPTIONS, ZIPOPT,
// PERL5OPT, ...).
var execVarSuffixes = []string{"PAGER", "EDITOR", "VISUAL", "ASKPASS", "_COMMAND", "_CMD", "_PROG",
	"_PROGRAM", "OPTIONS", "OPT", "OPTS", "_SHELL", "BROWSER", "OPEN", "CLOSE", "_HOOK", "_EXEC"}

// execVars are further variables that change what a program runs or loads.
var execVars = &wordSet{words: `PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV IFS PROMPT_COMMAND
	DYLD_INSERT_LIBRARIES PYTHONPATH PYTHONSTARTUP PYTHONHOME NODE_OPTIONS NODE_PATH GIT_SSH GIT_SSH_COMMAND
	GIT_EXEC_PATH GIT_PROXY_COMMAND GIT_EXTERNAL_DIFF GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
	GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_TEMPLATE_DIR GIT_DIR GIT_WORK_TREE SHELLOPTS BASHOPTS SHELL
	LESS LESSKEY LESSKEYIN LESSKEY_CONTENT LESSOPEN LESSCLOSE MORE MANPAGER MANOPT MANROFFOPT
	TAR_OPTIONS ZIPOPT UNZIP UNZIPOPT GZIP BZIP BZIP2 XZ_OPT XZ_DEFAULTS RSYNC_RSH RSYNC_CONNECT_PROG
	WGETRC CURL_HOME PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB GCONV_PATH MAKEFLAGS MFLAGS MAKEFILES
	GOFLAGS AWKPATH AWKLIBPATH VIMINIT EXINIT MYVIMRC GDBHISTFILE PAGER EDITOR VISUAL
	SUDO_ASKPASS SSH_ASKPASS XDG_CONFIG_HOME HOME ZDOTDIR PS1 PS2 PS3 PS4
	RUSTC RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTDOC RUSTDOC_WRAPPER RUSTFLAGS CARGO_HOME`}

// gitPlainVars are the GIT_* variables a command may set: they name an
// identity, a date or how output looks. Every other GIT_* variable is
// execVar: GIT_COMMON_DIR, GIT_DIR, GIT_WORK_TREE, GIT_CEILING_DIRECTORIES
// and GIT_DISCOVERY_ACROSS_FILESYSTEM choose which repository (and so
// which configuration) git reads, GIT_TRACE* and GIT_*_FILE write to a
// path, GIT_CONFIG_* and the program variables name what runs (issue 21).
var gitPlainVars = &wordSet{words: `GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_NAME
	GIT_COMMITTER_EMAIL GIT_COMMITTER_DATE GIT_TERMINAL_PROMPT GIT_OPTIONAL_LOCKS GIT_FLUSH
	GIT_MERGE_VERBOSITY GIT_LITERAL_PATHSPECS GIT_GLOB_PATHSPECS GIT_NOGLOB_PATHSPECS
	GIT_ICASE_PATHSPECS GIT_DEFAULT_HASH GIT_REFLOG_ACTION GIT_ADVICE`}

// execVar reports whether assigning name changes which program runs or
// what it loads or reads as options.
func execVar(name string) bool {
	if execVars.has(name) || strings.HasPrefix(name, "GIT_") && !gitPlainVars.has(name) || strings.HasPrefix(name, "LD_") ||
		strings.HasPrefix(name, "CARGO_BUILD_") || strings.HasPrefix(name, "CARGO_TARGET_") ||
		strings.HasPrefix(name, "DYLD_") {
		return true
	}
	for _, s := range execVarSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// wrapperSpec describes a program that runs another program given by its
// operands (env, timeout, xargs, ...): such a command is classified by the
// program it runs, and at least code_execution when that cannot be known.
type wrapperSpec struct {
	opts *optSpec
	// skip is the number of operands before the command (timeout's
	// duration, chroot's directory).
	skip int
	// shell marks a wrapper that runs a shell when given no command.
	shell bool
	// input marks a wrapper that appends words it reads from its input.
	input bool
	// joined marks a wrapper that runs its words joined as a shell
	// command line (watch without -x).
	joined bool
	// noCmd lists options after which the operands are not a command
	// (command -v, taskset -p).
	noCmd []string
	// notCmd marks a wrapper whose operands are not a command (su's user,
	// script's log file): it runs its -c string or a shell.
	notCmd bool
	// minClass is the least class of any command it runs (sudo).
	minClass Class
}

var wrappers = &lazy[map[string]wrapperSpec]{build: newWrappers}

func newWrappers() map[string]wrapperSpec {
	const stop = allowlist | stopAtOperand
	sudo := wrapperSpec{opts: newSpec("AbEeHiKklnPSsVvN u= g= C= D= h? p= r= t= T= U= R=",
		`user= group= close-from= chdir= host= prompt= role= type= command-timeout= other-user= chroot=
		askpass background preserve-env? edit set-home login remove-timestamp reset-timestamp list
		non-interactive preserve-groups stdin shell validate version help no-update`, stop),
		noCmd:    []string{"-l", "--list", "-v", "--validate", "-k", "-K", "-V", "--version", "-h", "--help"},
		minClass: ClassSystemWrite, shell: true}
	// su, runuser and script permute: their -c may follow the operands.
	su := wrapperSpec{opts: newSpec("lmpfPT c$ C$ g= G= s= w=",
		`login preserve-environment pty no-pty command$ session-command$ shell= group= supp-group=
		whitelist-environment= fast help version`, allowlist), shell: true, notCmd: true, minClass: ClassSystemWrite}
	w := map[string]wrapperSpec{
		"sudo": sudo,
		"doas": {opts: newSpec("Lns u= C=", "", stop), shell: true, minClass: ClassSystemWrite},
		"pkexec": {opts: newSpec("", "user= disable-internal-agent keep-cwd help version", stop),
			shell: true, minClass: ClassSystemWrite},
		"run0": {opts: newSpec("", `user= group= unit= property= description= slice= slice-inherit nice=
			chdir= setenv= background= machine= pty pipe no-ask-password help version`, stop),
			shell: true, minClass: ClassSystemWrite},
		"su":      su,
		"runuser": su,
		"env": {opts: newSpec("0iv a= u= C= S$",
			`ignore-environment null unset= chdir= split-string$ block-signal? default-signal?
			ignore-signal? list-signal-handling debug help version argv0=`, stop)},
		"nice": {opts: newSpec("0123456789 n=", "adjustment= help version", stop)},
		"ionice": {opts: newSpec("t c= n= p= P= u=", "class= classdata= pid= pgid= uid= ignore help version", stop),
			noCmd: []string{"-p", "--pid", "-P", "--pgid", "-u", "--uid"}},
		"stdbuf":  {opts: newSpec("i= o= e=", "input= output= error= help version", stop)},
		"timeout": {opts: newSpec("v s= k=", "foreground preserve-status verbose signal= kill-after= help version", stop), skip: 1},
		"time":    {opts: newSpec("apqv f= o>", "format= output> append portability verbose quiet help version", stop)},
		"nohup":   {opts: newSpec("", "help version", stop)},
		"setsid":  {opts: newSpec("cfw", "ctty fork wait help version", stop)},
		"command": {opts: newSpec("pvV", "", stop), noCmd: []string{"-v", "-V"}},
		"exec":    {opts: newSpec("cl a=", "", stop)},
		"builtin": {opts: newSpec("", "", stop)},
		"chrt": {opts: newSpec("abdefiopmrRv T= P= D=", `all-tasks batch deadline fifo idle other pid max rr
			reset-on-fork verbose sched-runtime= sched-period= sched-deadline= help version`, stop),
			skip: 1, noCmd: []string{"-p", "--pid", "-m", "--max"}},
		"taskset": {opts: newSpec("acp", "all-tasks cpu-list pid help version", stop), skip: 1,
			noCmd: []string{"-p", "--pid"}},
		"unbuffer":   {opts: newSpec("p", "", stop)},
		"caffeinate": {opts: newSpec("dimsu t= w=", "", stop)},
		"busybox":    {opts: newSpec("", "list list-full install help", stop)},
		"flock": {opts: newSpec("sexnouFvhV w= E= c$", `shared exclusive nonblock nb no-fork unlock close
			timeout= wait= conflict-exit-code= command$ verbose help version`, stop), skip: 1},
		"chroot": {opts: newSpec("", "userspec= groups= skip-chdir help version", stop), skip: 1, shell: true},
		"watch": {opts: newSpec("bcCeEgprtwxhv d? n= q=", `beep color no-color differences? errexit chgexit
			equexit= interval= precise no-rerun no-title no-wrap exec help version shotsdir=`, stop), joined: true,
			minClass: ClassCodeExecution},
		"script": {opts: newSpec("aefqh c$ E= t? T> B> I> O> m= o=", `append command$ echo= return flush force
			log-in> log-out> log-io> log-timing> logging-format= output-limit= quiet timing? help version`, allowlist),
			shell: true, notCmd: true},
		"sg": {opts: newSpec("", "", stop), skip: 1, joined: true, shell: true, minClass: ClassSystemWrite},
		"setarch": {opts: newSpec("vRFLXBIST3", `verbose addr-no-randomize fdpic-funcptrs mmap-page-zero
			addr-compat-layout read-implies-exec 32bit short-inode whole-seconds sticky-timeouts
			uname-2.6 list help version`, stop), skip: 1, shell: true},
		"unshare": {opts: newSpec("cfrUimnpuCT S= G= R= w= l?",
			`mount? uts? ipc? net? pid? user? cgroup? time? fork kill-child? mount-proc? map-root-user
			map-current-user map-user= map-group= map-users= map-groups= map-auto owner= propagation=
			setgroups= keep-caps setuid= setgid= root= wd= monotonic= boottime= load-interp= help version
			mount-binfmt?`, stop), shell: true},
		"nsenter": {opts: newSpec("aFeZc t= S= G= r? w? m? u? i? n? p? U? C? T?",
			`target= all mount? uts? ipc? net? pid? user? cgroup? time? setuid= setgid= preserve-credentials
			root? wd? wdns= env no-fork follow-context join-cgroup user-parent keep-caps help version`, stop),
			shell: true, minClass: ClassSystemWrite},
		"prlimit": {opts: newSpec("c? d? e? f? i? l? m? n? q? r? s? t? u? v? x? y? p= o=",
			`pid= output= noheadings raw verbose as? core? cpu? data? fsize? locks? memlock? msgqueue? nice?
			nofile? nproc? rss? rtprio? rttime? sigpending? stack? help version`, stop),
			noCmd: []string{"-p", "--pid"}},
		"xargs": {opts: newSpec("0oprtx a= d= E= e? I= i? L= l? n= P= s=", `null arg-file= delimiter= eof?
			replace? max-lines? max-args= open-tty interactive max-procs= no-run-if-empty max-chars= verbose
			exit process-slot-var= show-limits help version`, stop), input: true},
	}
	for _, n := range []string{"linux32", "linux64", "i386", "x86_64"} {
		sa := w["setarch"]
		sa.skip = 0
		w[n] = sa
	}
	return w
}

// unwrap classifies the wrapper name's own options and returns the command
// it runs; done is set when it runs none that is left to classify.
func (c *classifier) unwrap(name string, ws wrapperSpec, args []word) (inner []word, done bool) {
	res := ws.opts.scan(args)
	switch res.class {
	case "":
	case ClassUnknown:
		// Which word is the program is not known; the words read as
		// operands are still classified as the command, which can only
		// add to the class.
		c.raise(ClassCodeExecution, name, name+": "+res.why+", so which program it runs is not known")
	default:
		c.raise(res.class, name, name+": "+res.why)
	}
	for _, w := range res.writes {
		cl, why := c.writeTarget(w.v, w.dyn)
		c.raise(cl, name, name+" writes to "+why)
	}
	rest := res.operands
	if name == "xargs" {
		// With -I or -i each occurrence of the replace string is a word
		// read from the input.
		repl := ""
		for _, o := range []string{"-I", "-i", "--replace"} {
			if res.seen[o] {
				repl = "{}"
				if vs := res.vals[o]; len(vs) > 0 && vs[len(vs)-1].v != "" {
					repl = vs[len(vs)-1].v
				}
			}
		}
		if repl != "" {
			marked := make([]word, len(rest))
			for i, w := range rest {
				if strings.Contains(w.v, repl) {
					// The program's name, or a word that may be an
					// option; as a path it stays what it was.
					w.mayOpt = true
					w.dyn = w.dyn || i == 0
				}
				marked[i] = w
			}
			rest = marked
		}
	}
	if name == "env" || name == "sudo" {
		// Both take NAME=value words before the command.
		for len(rest) > 0 {
			v, ok := assignmentName(rest[0])
			if !ok {
				break
			}
			if execVar(v) {
				c.raise(ClassCodeExecution, v, "assignment to "+v+" changes what runs")
			}
			rest = rest[1:]
		}
	}
	if name == "env" {
		// The shell's git guard lives in the environment (gitguard.go):
		// dropping it, or a variable that changes what runs, is
		// code_execution.
		if res.seen["-i"] || res.seen["--ignore-environment"] || len(rest) > 0 && rest[0].v == "-" {
			c.raise(ClassCodeExecution, name, "env -i drops the environment, and with it the shell's git guard")
		}
		for _, u := range append(append([]word{}, res.vals["-u"]...), res.vals["--unset"]...) {
			if strings.HasPrefix(u.v, "GIT_") || u.dyn {
				c.raise(ClassCodeExecution, name, "env -u "+u.v+" can drop the shell's git guard")
			}
		}
		if len(rest) > 0 && rest[0].v == "-" {
			rest = rest[1:]
		}
	}
	if name == "exec" && (res.seen["-c"]) {
		c.raise(ClassCodeExecution, name, "exec -c drops the environment, and with it the shell's git guard")
	}
	if name == "env" {
		if len(res.cmds) > 0 {
			// env -S splits its string into the words of the command,
			// before the remaining operands.
			line := ""
			for _, cmd := range res.cmds {
				line += cmd.v + " "
			}
			dyn := false
			for _, w := range res.cmds {
				dyn = dyn || w.dyn
			}
			for _, w := range rest {
				line += shellQuote(w.v) + " "
				dyn = dyn || w.dyn
			}
			c.shellString(name, word{v: line, dyn: dyn})
			return nil, true
		}
	}
	for _, cmd := range res.cmds {
		c.shellString(name, cmd)
	}
	for _, o := range ws.noCmd {
		if res.seen[o] {
			c.raise(ClassSafe, name, name+" "+o+" runs no command")
			return nil, true
		}
	}
	if ws.notCmd {
		if name == "script" {
			for _, w := range rest {
				cl, why := c.writeTarget(w.v, w.dyn)
				c.raise(cl, name, name+" writes to "+why)
			}
		}
		rest = nil
	}
	if len(rest) < ws.skip {
		rest = nil
	} else {
		rest = rest[ws.skip:]
	}
	if name == "flock" && len(rest) > 0 && (rest[0].v == "-c" || rest[0].v == "--command") {
		if len(rest) > 1 {
			c.shellString(name, rest[1])
		} else {
			c.raise(ClassCodeExecution, name, "flock -c without a command")
		}
		return nil, true
	}
	if ws.joined && !res.seen["-x"] && !res.seen["--exec"] && len(rest) > 0 {
		// The words are joined with spaces and run by sh -c.
		line, dyn := "", false
		for _, w := range rest {
			line += w.v + " "
			dyn = dyn || w.dyn
		}
		c.shellString(name, word{v: line, dyn: dyn})
		return nil, true
	}
	if len(rest) > 0 {
		return rest, false
	}
	switch {
	case len(res.cmds) > 0:
	case ws.input:
		return []word{{v: "echo"}}, false
	case ws.shell:
		c.raise(ClassCodeExecution, name, name+" without a command runs a shell")
	default:
		c.raise(ClassSafe, name, name+" without a command")
	}
	return nil, true
}

// shellString classifies w as a command line that name runs with a shell.
func (c *classifier) shellString(name string, w word) {
	if w.dyn {
		c.raise(ClassCodeExecution, name, name+" runs a command decided at run time")
	}
	v := c.nested(w.v)
	c.raise(v.Class, v.Argv0, name+": "+v.Reason)
	if v.Class == ClassUnknown {
		// What a wrapper runs is at least code execution when it cannot
		// be told.
		c.raise(ClassCodeExecution, name, name+" runs a command that cannot be classified: "+v.Reason)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// awk classifies an awk program: one read from a file, loaded, or decided
// at run time is code; program text is code when it can run commands or
// write files (system, getline, a pipe, a redirection, gawk's @).
func (c *classifier) awk(name string, args []word, opts *optResult, r segResult) segResult {
	set := func(class Class, why string) segResult {
		r.reason = why
		c.raise(class, name, why)
		return r
	}
	for _, w := range opts.vals["-W"] {
		key, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(w.v)), "=")
		for _, run := range []string{"exec", "file", "include", "load", "source"} {
			if key != "" && strings.HasPrefix(run, key) || w.dyn {
				r.interpreter = true
				return set(ClassCodeExecution, name+" -W "+w.v+" reads a program")
			}
		}
	}
	if len(opts.scriptFiles) > 0 {
		r.interpreter = true
		return set(ClassCodeExecution, "runs an awk program file")
	}
	texts := opts.scripts
	if len(texts) == 0 && len(opts.operands) > 0 {
		texts = opts.operands[:1]
	}
	if opts.seen["--sandbox"] || opts.seen["-S"] && name == "gawk" {
		return set(ClassSafe, "awk in sandbox mode")
	}
	for _, t := range texts {
		if t.dyn {
			r.interpreter = true
			return set(ClassCodeExecution, "awk program decided at run time")
		}
		if strings.Contains(t.v, "system") || strings.ContainsAny(t.v, "|>@") || strings.Contains(t.v, "getline") {
			r.interpreter = true
			return set(ClassCodeExecution, "awk program runs commands or writes files")
		}
	}
	return set(ClassSafe, "awk text processing")
}

// sed classifies a sed command: the script's e command and s///e flag run
// commands, its w and W commands and s///w flag write files, and a script
// read from a file or decided at run time may do either.
func (c *classifier) sed(opts *optResult, r segResult) segResult {
	set := func(class Class, why string) segResult {
		r.reason = why
		c.raise(class, "sed", why)
		return r
	}
	sandbox := opts.seen["--sandbox"]
	files := opts.operands
	scripts := opts.scripts
	if len(scripts) == 0 && len(opts.scriptFiles) == 0 && len(files) > 0 {
		scripts, files = files[:1], files[1:]
	}
	if !sandbox {
		if len(opts.scriptFiles) > 0 {
			return set(ClassCodeExecution, "sed -f runs a script file, which may run commands")
		}
		for _, s := range scripts {
			if s.dyn {
				return set(ClassCodeExecution, "sed script decided at run time")
			}
		}
		var text []string
		for _, s := range scripts {
			text = append(text, s.v)
		}
		execs, writes, ok := sedScript(strings.Join(text, "\n"))
		switch {
		case !ok:
			return set(ClassCodeExecution, "sed script this classifier cannot read, which may run commands")
		case execs:
			return set(ClassCodeExecution, "sed script runs commands (e)")
		}
		for _, w := range writes {
			cl, why := c.writeTarget(w, false)
			c.raise(cl, "sed", "sed script writes to "+why)
		}
	}
	if opts.seen["-i"] || opts.seen["--in-place"] {
		return c.writeArgs("sed", files, r, "edits files in place")
	}
	return set(ClassSafe, "sed text processing")
}

// sedScript reads a GNU sed script. It reports whether the script runs
// commands (the e command, the e flag of s), the files it writes (w, W,
// the w flag of s), and ok false when it cannot read the script, which is
// then taken to run commands.
func sedScript(s string) (execs bool, writes []string, ok bool) {
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = len(s) - i
		}
		v := s[i : i+j]
		i += j
		return v
	}
	// delimited reads up to the next unescaped d; ok false at the end.
	delimited := func(d byte) bool {
		for i < len(s) {
			switch {
			case s[i] == '\\' && i+1 < len(s):
				i += 2
			case s[i] == d:
				i++
				return true
			case s[i] == '\n' && d != '\n':
				return false
			default:
				i++
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for i < len(s) {
		skipSpace()
		if i >= len(s) {
			break
		}
		if s[i] == ';' || s[i] == '\n' || s[i] == '}' {
			i++
			continue
		}
		if s[i] == '#' {
			toEOL()
			continue
		}
		if !address() {
			return false, nil, false
		}
		skipSpace()
		if i < len(s) && s[i] == ',' {
			i++
			skipSpace()
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return false, nil, false
			}
			skipSpace()
		}
		for i < len(s) && (s[i] == '!' || s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return false, nil, false
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '=', 'd', 'D', 'F', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z':
		case 'q', 'Q', 'l', 'L':
			skipSpace()
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			skipSpace()
			for i < len(s) && s[i] != ';' && s[i] != '\n' && (cmd == ':' || s[i] != '}') {
				i++
			}
		case 'a', 'i', 'c':
			// Text to the end of the line, continued by a trailing
			// backslash.
			for {
				line := toEOL()
				if !strings.HasSuffix(line, "\\") || i >= len(s) {
					break
				}
				i++
			}
		case 'r', 'R':
			toEOL()
		case 'w', 'W':
			skipSpace()
			writes = append(writes, toEOL())
		case 'e':
			return true, writes, true
		case 'y':
			if i >= len(s) {
				return false, nil, false
			}
			d := s[i]
			i++
			if d == '\\' || d == '\n' || !delimited(d) || !delimited(d) {
				return false, nil, false
			}
		case 's':
			if i >= len(s) {
				return false, nil, false
			}
			d := s[i]
			i++
			if d == '\\' || d == '\n' || !delimited(d) || !delimited(d) {
				return false, nil, false
			}
		flags:
			for i < len(s) {
				switch f := s[i]; {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
				case f == 'e':
					return true, writes, true
				case f == 'w':
					i++
					skipSpace()
					writes = append(writes, toEOL())
				case f == ';' || f == '\n' || f == '}' || f == ' ' || f == '\t' || f == '#':
					break flags
				default:
					return false, nil, false
				}
			}
		default:
			return false, nil, false
		}
	}
	return false, writes, true
}

// zip classifies Info-ZIP zip's options: -TT and --unzip-command name the
// program that tests the archive. It returns the files written.
func (c *classifier) zip(args []word) []word {
	for i, a := range args {
		if a.v == "--" {
			break
		}
		if len(a.v) > 2 && a.v[0] == '-' && a.v[1] != '-' && strings.Contains(a.v, "TT") {
			cmd := a.v[strings.Index(a.v, "TT")+2:]
			if cmd == "" && i+1 < len(args) {
				cmd = args[i+1].v
			}
			c.raise(ClassCodeExecution, "zip", "zip -TT runs "+quoteArg(cmd))
		}
	}
	res := zipSpec.get().scan(args)
	if res.class != "" {
		c.raise(res.class, "zip", "zip: "+res.why)
	}
	return append(res.writes, res.operands...)
}

// zipSpec is Info-ZIP zip's table; multi-letter options such as -tt or -lf
// read as bundles of its letters, which only matters for the arity of
// harmless options.
var zipSpec = &lazySpec{short: "0123456789AcdDefFgjJklLMoqrRSTuvVwXyzUh@$! m- N= b= n= t= x= i= O> P= Z= s=",
	long: `unzip-command! output-file> recurse-paths recurse-patterns quiet verbose junk-paths update freshen
	delete move- test exclude= include= symlinks encrypt password= compression-method= temp-path=
	suffixes= split-size= split-pause split-bell split-verbose filesync no-extra grow fix fixfix
	adjust-sfx unsfx latest-time display-bytes display-counts display-dots display-globaldots
	display-usize display-volume dot-size= log-append log-file> log-info copy-entries to-crlf
	from-crlf help version license no-dir-entries no-wild wild-stop-dirs names-stdin
	translate-eol test-command= la lf> li sf so su sU ic FS FF MM ws nw sp sb sc sd sv`, flags: allowlist}

// sshRunning are ssh configuration keywords whose value is a program or a
// library ssh runs or loads on the client.
var sshRunning = &wordSet{words: `proxycommand localcommand knownhostscommand pkcs11provider
	securitykeyprovider xauthlocation match include`}

// ssh classifies the options of ssh, scp and sftp that run a program on
// this machine: -o with a program-naming keyword, -F (a configuration file
// can say Match exec), scp and sftp's -S, sftp's -D and -b (a batch can
// hold ! commands). The interactive sftp prompt also takes ! commands from
// its input.
func (c *classifier) ssh(name string, opts *optResult, r segResult) segResult {
	for _, v := range opts.vals["-o"] {
		key := strings.ToLower(strings.TrimSpace(v.v))
		if j := strings.IndexAny(key, "= \t"); j >= 0 {
			key = key[:j]
		}
		if sshRunning.has(key) || v.dyn {
			c.raise(ClassCodeExecution, name, name+" -o "+quoteArg(v.v)+" runs a program")
		}
	}
	for _, v := range opts.vals["-F"] {
		if v.v != "none" && v.v != "/dev/null" || v.dyn {
			c.raise(ClassCodeExecution, name, name+" -F reads a configuration file, which can name programs to run")
		}
	}
	if name == "sftp" {
		if len(opts.vals["-b"]) > 0 {
			c.raise(ClassCodeExecution, name, "sftp -b runs a batch file, which can hold ! commands")
		}
		r.interpreter = true
		r.reason = "sftp runs the ! commands in its input"
		c.raise(ClassCodeExecution, name, r.reason)
		return r
	}
	r.reason = name + " contacts the network"
	c.raise(ClassNetworkEgress, name, r.reason)
	return r
}

// netExec classifies the program-running options of network tools that
// the option tables cannot express.
func (c *classifier) netExec(name string, args []word, opts *optResult) {
	switch name {
	case "wget":
		for _, v := range append(opts.vals["-e"], opts.vals["--execute"]...) {
			cmd := strings.NewReplacer("_", "", "-", "", " ", "", "\t", "").Replace(strings.ToLower(v.v))
			if strings.HasPrefix(cmd, "useaskpass") || v.dyn {
				c.raise(ClassCodeExecution, name, "wget -e "+quoteArg(v.v)+" runs a program")
			}
		}
		if len(opts.scriptFiles) > 0 {
			c.raise(ClassCodeExecution, name, "wget --config reads a file that can name a program")
		}
	case "aria2c":
		for _, a := range args {
			if strings.HasPrefix(a.v, "--on-") || a.dyn && strings.HasPrefix(a.v, "-") {
				c.raise(ClassCodeExecution, name, "aria2c "+quoteArg(a.v)+" runs a program")
			}
		}
		if len(opts.scriptFiles) > 0 {
			c.raise(ClassCodeExecution, name, "aria2c --conf-path reads a file that can name programs")
		}
	case "socat":
		for _, a := range args {
			v := strings.ToLower(a.v)
			if strings.Contains(v, "exec:") || strings.Contains(v, "system:") || a.dyn {
				c.raise(ClassCodeExecution, name, "socat "+quoteArg(a.v)+" runs a program")
			}
		}
	case "rsync":
		rs := specFor("rsync")
		for _, v := range opts.vals["--remote-option"] {
			if rs.looksRunning(v) || v.dyn {
				c.raise(ClassCodeExecution, name, "rsync --remote-option "+quoteArg(v.v)+" runs a program")
			}
		}
		if len(opts.scriptFiles) > 0 {
			c.raise(ClassCodeExecution, name, "rsync --config reads a file that can name programs")
		}
	}
}

// safePagerCommand reports whether a +command of less or more only moves
// or searches: a line number, G, g, F, %, or a search.
func safePagerCommand(v string) bool {
	v = strings.TrimLeft(v, "+")
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "?") {
		return true // a search
	}
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	return i == len(v) || i == len(v)-1 && strings.IndexByte("GgFp%", v[i]) >= 0
}

// gitRuns returns why git subcommand sub with arguments rest runs a
// program named on the command line, or "". (Programs that a repository's
// own configuration or hooks name are not visible here; see
// docs/SECURITY.md.)
func gitRuns(sub string, rest []word) string {
	for _, a := range rest {
		v := a.v
		switch {
		case a.dyn && strings.HasPrefix(v, "-"):
			return "git " + sub + " option decided at run time"
		case strings.HasPrefix(v, "--upload-pack"), strings.HasPrefix(v, "--receive-pack"),
			strings.HasPrefix(v, "--exec"), strings.HasPrefix(v, "--extcmd"),
			strings.HasPrefix(v, "--open-files-in-pager"),
			(sub == "clone" || sub == "init") && strings.HasPrefix(v, "--template"),
			strings.HasPrefix(v, "--smtp-server"), strings.HasPrefix(v, "--sendmail-cmd"),
			strings.HasPrefix(v, "--to-cmd"), strings.HasPrefix(v, "--cc-cmd"),
			strings.HasPrefix(v, "--header-cmd"), strings.HasPrefix(v, "--config"),
			strings.HasPrefix(v, "--tool"):
			return "git " + sub + " " + quoteArg(v) + " runs a program"
		case (sub == "clone" || sub == "ls-remote") && strings.HasPrefix(v, "-u"),
			sub == "clone" && strings.HasPrefix(v, "-c"),
			(sub == "rebase" || sub == "difftool") && strings.HasPrefix(v, "-x"),
			(sub == "difftool" || sub == "mergetool") && strings.HasPrefix(v, "-t"),
			sub == "grep" && strings.HasPrefix(v, "-O"),
			sub == "help" && (v == "-w" || v == "--web" || v == "-i" || v == "--info"):
			return "git " + sub + " " + quoteArg(v) + " runs a program"
		case sub == "submodule" && v == "foreach", sub == "bisect" && v == "run":
			return "git " + sub + " " + v + " runs commands"
		}
	}
	if sub == "config" {
		if key := gitConfigSetKey(rest); key != "" && !gitHarmlessKey(key) {
			return "git config sets " + key + ", which can name a program git runs"
		}
	}
	return ""
}

// gitConfigSetKey returns the key git config sets, or "" when it only
// reads.
func gitConfigSetKey(rest []word) string {
	var ops []string
	set := false
	for i := 0; i < len(rest); i++ {
		v := rest[i].v
		switch {
		case v == "--get" || v == "--get-all" || v == "--list" || v == "-l" || v == "--get-regexp" ||
			v == "--unset" || v == "--unset-all" || v == "--show-origin" || v == "--get-urlmatch" ||
			v == "get" || v == "list" || v == "unset" || v == "--remove-section" || v == "--rename-section":
			if len(ops) == 0 && (v == "get" || v == "list" || v == "unset") {
				return ""
			}
			if strings.HasPrefix(v, "--") || v == "-l" {
				return ""
			}
		case v == "--add" || v == "--replace-all" || v == "set":
			set = true
			if v == "set" && len(ops) == 0 {
				continue
			}
		case v == "-f" || v == "--file" || v == "--blob" || v == "--type" || v == "--default" || v == "--comment":
			i++
		case strings.HasPrefix(v, "-"):
		default:
			ops = append(ops, v)
		}
	}
	if len(ops) >= 2 || set && len(ops) >= 1 {
		return strings.ToLower(ops[0])
	}
	return ""
}

// gitHarmlessKey reports whether setting git configuration key names no
// program: identity, colours and a few behaviour switches.
func gitHarmlessKey(key string) bool {
	for _, p := range []string{"user.", "color.", "advice.", "init.defaultbranch", "core.autocrlf", "core.eol",
		"core.filemode", "core.ignorecase", "core.quotepath", "pull.rebase", "pull.ff", "push.default",
		"push.autosetupremote", "merge.conflictstyle", "rebase.autosquash", "fetch.prune", "log.",
		"commit.verbose", "status.", "column.ui", "branch.autosetupmerge", "safe.directory", "i18n."} {
		if key == p || strings.HasSuffix(p, ".") && strings.HasPrefix(key, p) {
			return true
		}
	}
	if strings.HasPrefix(key, "branch.") && (strings.HasSuffix(key, ".remote") || strings.HasSuffix(key, ".merge")) {
		return true
	}
	return strings.HasPrefix(key, "remote.") && (strings.HasSuffix(key, ".url") || strings.HasSuffix(key, ".fetch"))
}
