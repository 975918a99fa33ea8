package tools

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// catalogueEntry is one line of testdata/exec_catalogue.txt: an option or
// argument that makes a program run another program, a script or a
// filter.
type catalogueEntry struct {
	line                                 int
	prog, style, opt, value, bundle, cmd string
	source                               string
}

func loadCatalogue(t testing.TB) []catalogueEntry {
	t.Helper()
	f, err := os.Open("testdata/exec_catalogue.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []catalogueEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			t.Fatalf("exec_catalogue.txt:%d: %d fields, want 7", n, len(f))
		}
		e := catalogueEntry{line: n, prog: f[0], style: f[1], opt: f[2], value: f[3], bundle: f[4], cmd: f[5], source: f[6]}
		switch e.style {
		case "long", "short", "word":
			if !strings.Contains(e.cmd, "{}") || !strings.HasPrefix(e.opt, "-") {
				t.Fatalf("exec_catalogue.txt:%d: a %s entry needs an option and {} in its command", n, e.style)
			}
		case "none":
		default:
			t.Fatalf("exec_catalogue.txt:%d: style %q", n, e.style)
		}
		if e.source == "" {
			t.Fatalf("exec_catalogue.txt:%d: no source", n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// spellings returns every spelling of e's option with its value: for a
// long option --opt=v, --opt v and its abbreviations; for a short one
// -Xv, -X v and the same after e's bundle letters.
func (e catalogueEntry) spellings() []string {
	v := shellQuote(e.value)
	switch e.style {
	case "none":
		return []string{e.cmd}
	case "word":
		return []string{e.with(e.opt + " " + v)}
	case "short":
		if e.value == "-" {
			return []string{e.with(e.opt), e.with("-" + e.bundle + e.opt[1:])}
		}
		out := []string{e.with(e.opt + v), e.with(e.opt + " " + v)}
		if e.bundle != "-" {
			out = append(out, e.with("-"+e.bundle+e.opt[1:]+v), e.with("-"+e.bundle+e.opt[1:]+" "+v))
		}
		return out
	}
	out := []string{e.with(e.opt + "=" + v), e.with(e.opt + " " + v)}
	for n := len(e.opt) - 1; n >= 5; n-- {
		if e.abbreviates(e.opt[:n]) {
			out = append(out, e.with(e.opt[:n]+"="+v))
		}
	}
	return out
}

// abbreviates reports whether the prefix p of e's long option still names
// it: getopt_long takes an exact match over an abbreviation, so --strip is
// install's --strip, not --strip-program.
func (e catalogueEntry) abbreviates(p string) bool {
	s := specFor(e.prog)
	if s == nil {
		return true
	}
	_, exact := s.long[p[2:]]
	return !exact
}

func (e catalogueEntry) with(opt string) string { return strings.Replace(e.cmd, "{}", opt, 1) }

// TestExecCatalogue: every catalogue entry, in every spelling of its
// option, is code_execution or more severe.
func TestExecCatalogue(t *testing.T) {
	entries := loadCatalogue(t)
	if len(entries) < 150 {
		t.Fatalf("the catalogue has %d entries", len(entries))
	}
	n := 0
	for _, e := range entries {
		for _, cmd := range e.spellings() {
			n++
			v := ClassifyShell(cmd)
			if Severity(v.Class) < Severity(ClassCodeExecution) {
				t.Errorf("exec_catalogue.txt:%d (%s): ClassifyShell(%q) = %s (%s), want code_execution or above",
					e.line, e.source, cmd, v.Class, v.Reason)
			}
		}
	}
	t.Logf("%d entries, %d spellings", len(entries), n)
}

// catalogueWrappers run the command after them; each may prefix a
// catalogue command without changing what runs.
var catalogueWrappers = []string{"env ", "env -i ", "env -u HOME ", "env --unset=HOME ", "timeout 5 ",
	"timeout -s KILL 5 ", "timeout --kill-after=1 5 ", "nice ", "nice -n 5 ", "nice -5 ", "nohup ",
	"stdbuf -oL ", "stdbuf --output=L ", "setsid ", "setsid -f ", "ionice -c 3 ", "taskset 1 ", "command ",
	"exec ", "sudo ", "sudo -u root ", "doas ", "flock /tmp/l ", "flock -w 5 /tmp/l ", "chrt -o 0 ",
	"time ", "/usr/bin/time -p ", "unbuffer ", "xargs -a /dev/null ", "busybox ", "/usr/bin/env ", "\\env "}

// catalogueLines wrap a whole command line; %s is the command, %q the
// command quoted for sh.
var catalogueLines = []string{"%s", "sh -c %q", "bash -c %q", "eval %q", "(%s)", "{ %s; }", "true && %s",
	"false || %s", "%s &", "if true; then %s; fi", "%s | cat", "cat f | %s", "echo $(%s)", "x=`%s`",
	"for i in 1; do %s; done", "ls; %s", "f() { %s; }", "sudo sh -c %q", "watch -x sh -c %q", "flock /tmp/l -c %q",
	"env -S %q", "script -q -c %q /dev/null", "find . -exec sh -c %q \\;"}

// permutes holds the catalogue's programs that read options after
// operands (GNU getopt_long's default, and zip).
var permutes = map[string]bool{"tar": true, "gtar": true, "bsdtar": true, "sort": true, "split": true,
	"install": true, "rsync": true, "rg": true, "ag": true, "man": true, "less": true, "wget": true,
	"aria2c": true, "cpio": true, "ncat": true, "mosh": true, "sed": true, "zip": true}

// quoteRandom quotes s in one of the ways sh reads back as s.
func quoteRandom(r *rand.Rand, s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_=./:,+@%", c)) {
			plain = false
		}
	}
	switch r.IntN(5) {
	case 0:
		if plain {
			return s
		}
		return shellQuote(s)
	case 1:
		return shellQuote(s)
	case 2:
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s) + `"`
	case 3:
		var b strings.Builder
		for _, c := range s {
			if c == '\n' {
				b.WriteString(`$'\n'`)
				continue
			}
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		}
		return b.String()
	default:
		return "$'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
	}
}

// splitQuote writes the word s with a quote pair inside it ("--to-com”mand").
func splitQuote(r *rand.Rand, s string) string {
	if len(s) < 3 || r.IntN(3) != 0 {
		return s
	}
	i := 2 + r.IntN(len(s)-2)
	return s[:i] + []string{"''", `""`, `\`}[r.IntN(3)] + s[i:]
}

// generate spells entry e at random: the option's spelling (attached,
// separate, abbreviated, bundled), the quoting of its value and name, the
// program's name (by path, escaped, quoted), wrappers before it and a
// construct around the whole line.
func (e catalogueEntry) generate(r *rand.Rand) string {
	cmd := e.cmd
	if e.style != "none" {
		v := quoteRandom(r, e.value)
		var opt string
		switch e.style {
		case "word":
			opt = e.opt + " " + v
		case "short":
			name := e.opt
			if e.bundle != "-" && r.IntN(2) == 0 {
				name = "-" + e.bundle[:1+r.IntN(len(e.bundle))] + e.opt[1:]
			}
			switch {
			case e.value == "-":
				opt = name
			case r.IntN(2) == 0:
				opt = splitQuote(r, name) + v
			default:
				opt = splitQuote(r, name) + " " + v
			}
		case "long":
			name := e.opt
			if len(name) > 5 && r.IntN(2) == 0 {
				if p := name[:5+r.IntN(len(name)-5)]; e.abbreviates(p) {
					name = p
				}
			}
			if r.IntN(2) == 0 {
				opt = splitQuote(r, name) + "=" + v
			} else {
				opt = splitQuote(r, name) + " " + v
			}
		}
		if permutes[e.prog] && r.IntN(3) == 0 {
			// GNU getopt takes options after operands too.
			cmd = strings.Replace(cmd, " {}", "", 1) + " " + opt
		} else {
			cmd = strings.Replace(cmd, "{}", opt, 1)
		}
	}
	if strings.HasPrefix(cmd, e.prog+" ") || cmd == e.prog {
		rest := cmd[len(e.prog):]
		name := []string{e.prog, "/usr/bin/" + e.prog, "\\" + e.prog, "'" + e.prog + "'", `"` + e.prog + `"`, "/bin/" + e.prog}[r.IntN(6)]
		if e.prog == "time" && name != e.prog {
			name = "/usr/bin/time"
		}
		cmd = name + rest
		for k := r.IntN(3); k > 0; k-- {
			cmd = catalogueWrappers[r.IntN(len(catalogueWrappers))] + cmd
		}
	}
	if r.IntN(3) == 0 && !strings.Contains(cmd, "|") {
		cmd = []string{"env ", "FOO=1 ", "BAR=x "}[r.IntN(3)] + cmd
	}
	line := catalogueLines[r.IntN(len(catalogueLines))]
	quoted := shellQuote(cmd)
	if strings.Contains(line, "%q") {
		return strings.Replace(line, "%q", quoted, 1)
	}
	return strings.Replace(line, "%s", cmd, 1)
}

// FuzzExecCatalogue generates commands from the catalogue (random
// spellings, bundling, quoting, program names, wrappers and surrounding
// constructs) and checks none is classified below code_execution. The
// seed corpus, three seeds for every entry, runs in every go test.
func FuzzExecCatalogue(f *testing.F) {
	entries := loadCatalogue(f)
	for i := range entries {
		for s := range uint64(3) {
			f.Add(uint16(i), s*7919+uint64(i))
		}
	}
	f.Fuzz(func(t *testing.T, i uint16, seed uint64) {
		e := entries[int(i)%len(entries)]
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		cmd := e.generate(r)
		v := ClassifyShell(cmd)
		if Severity(v.Class) < Severity(ClassCodeExecution) {
			t.Fatalf("exec_catalogue.txt:%d (%s): ClassifyShell(%q) = %s (%s), want code_execution or above",
				e.line, e.source, cmd, v.Class, v.Reason)
		}
	})
}
