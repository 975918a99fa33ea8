package tools

import (
	"strings"
	"testing"
)

// TestClassifyOptions: common commands of the programs that now have
// option tables classify as they did before; options a write-class
// program does not know make it unknown; words decided at run time may be
// options; wrappers are classified by what they run.
func TestClassifyOptions(t *testing.T) {
	tests := []struct {
		cmd   string
		class Class
	}{
		// Everyday use, unchanged.
		{"tar -czf out.tgz src", ClassLocalWrite},
		{"tar xzf a.tgz", ClassCodeExecution}, // extraction: see TestClassifyGitPlanting,
		{"tar -xzf a.tgz -C build", ClassCodeExecution},
		{"tar --exclude=node_modules --exclude-vcs -czf a.tgz .", ClassLocalWrite},
		{"tar -C /etc -xf a.tar", ClassSystemWrite},
		{"tar tvf a.tar", ClassLocalWrite},
		{"tar -cf a.tar ./*", ClassLocalWrite},
		{"tar -cf a.tar -- *", ClassLocalWrite},
		{"tar -cf a.tar \"$DIR\"/x", ClassSystemWrite},
		{"tar -T list.txt --verbatim-files-from -cf a.tar", ClassLocalWrite},
		{"zip -r out.zip dir", ClassLocalWrite},
		{"zip -r out.zip dir -x '*.git*'", ClassLocalWrite},
		{"zip -q -9 out.zip a b", ClassLocalWrite},
		{"unzip -o a.zip -d out", ClassCodeExecution},
		{"unzip -q a.zip", ClassCodeExecution},
		{"gzip -9 f", ClassLocalWrite},
		{"gunzip f.gz", ClassLocalWrite},
		{"xz -d -T0 f.xz", ClassLocalWrite},
		{"bzip2 -k f", ClassLocalWrite},
		{"sort -u f", ClassSafe},
		{"sort -t, -k2 -n f", ClassSafe},
		{"sort --key=2 --field-separator=: f", ClassSafe},
		{"sort -o out.txt f", ClassLocalWrite},
		{"sort -o /etc/x f", ClassSystemWrite},
		{"sed -n '1,5p' f", ClassSafe},
		{"sed -E 's/(a)/\\1/g' f", ClassSafe},
		{"sed '/^#/d' f", ClassSafe},
		{"sed -n '/start/,/end/p' f", ClassSafe},
		{"sed 's|/usr|/opt|g; s/x/y/2' f", ClassSafe},
		{"sed -e 's/a/b/' -e '$a\\\nlast' f", ClassSafe},
		{"sed -i 's/a/b/g' f", ClassLocalWrite},
		{"sed -i.bak -e 's/a/b/' f g", ClassLocalWrite},
		{"sed -i 's/a/b/' /etc/hosts", ClassSystemWrite},
		{"sed 's/a/b/w out.txt' f", ClassLocalWrite},
		{"sed -n 'w /etc/x' f", ClassSystemWrite},
		{"sed --sandbox -f script.sed f", ClassSafe},
		{"awk '{print $1}' f", ClassSafe},
		{"awk -F: '{print $1}' /etc/passwd", ClassSafe},
		{"awk -F : '{print $1}' f", ClassSafe},
		{"awk -v n=3 'NR<=n' f", ClassSafe},
		{"cp -r a b", ClassLocalWrite},
		{"cp -t dst a b", ClassLocalWrite},
		{"cp --target-directory=/opt a", ClassSystemWrite},
		{"mv a b", ClassLocalWrite},
		{"ln -sf a b", ClassLocalWrite},
		{"mkdir -p -m 755 a/b", ClassLocalWrite},
		{"touch -d 2020-01-01 f", ClassLocalWrite},
		{"touch -r /etc/passwd f", ClassLocalWrite},
		{"tee -a log", ClassLocalWrite},
		{"install -m 755 a /usr/local/bin/a", ClassSystemWrite},
		{"install -d build/bin", ClassLocalWrite},
		{"patch -p1 -i fix.diff", ClassCodeExecution},
		{"patch -d /etc -p0 -i fix.diff", ClassSystemWrite},
		{"chmod +x run.sh", ClassLocalWrite},
		{"chmod -R 755 build", ClassLocalWrite},
		{"chmod -x /etc/passwd", ClassSystemWrite},
		{"chmod -R -x /", ClassBlocked},
		{"chmod --reference=a /etc/b", ClassSystemWrite},
		{"chown -R me:me ~", ClassBlocked},
		{"chgrp --frobnicate g f", ClassUnknown},
		{"mktemp -p /etc x.XXXX", ClassSystemWrite},
		{"mktemp --tmpdir=/etc x.XXXX", ClassSystemWrite},
		{"zip -m a.zip f", ClassDestructive},
		{"unzip -Z1 a.zip", ClassSafe},
		{"split -l 100 f part_", ClassLocalWrite},
		{"find . -name '*.go'", ClassSafe},
		{"find . -type f -exec grep -l x {} +", ClassSafe},
		{"grep -r foo .", ClassSafe},
		{"less +G f", ClassSafe},
		{"less -R +/pattern f", ClassSafe},
		{"git status", ClassSafe},
		{"git -C sub log --oneline -5", ClassSafe},
		{"git commit -m 'msg'", ClassLocalWrite},
		{"git config user.name 'A B'", ClassLocalWrite},
		{"git config --get core.pager", ClassSafe},
		{"git diff --output=out.diff", ClassLocalWrite},
		{"ssh host ls", ClassNetworkEgress},
		{"ssh -i key -p 2222 -o StrictHostKeyChecking=no host", ClassNetworkEgress},
		{"ssh -F none host", ClassNetworkEgress},
		{"scp -P 2222 a host:b", ClassNetworkEgress},
		{"rsync -avz src/ host:dst/", ClassNetworkEgress},
		{"rsync -a --delete src/ dst/", ClassNetworkEgress},
		{"wget -e robots=off https://x/y", ClassNetworkEgress},
		{"curl -fsSL -o out https://x", ClassNetworkEgress},
		// Wrappers: what they run.
		{"env | grep X", ClassSafe},
		{"env -u HOME ls", ClassSafe},
		{"env --unset HOME sh -c 'rm -rf /'", ClassBlocked},
		{"env -S 'rm -rf /'", ClassBlocked},
		{"timeout 10 ls", ClassSafe},
		{"timeout --signal KILL 10 rm -rf /", ClassBlocked},
		{"xargs -n1 echo", ClassSafe},
		{"find . -name '*.txt' | xargs grep foo", ClassSafe},
		{"xargs -0 rm -f", ClassDestructive},
		{"xargs -I{} cp {} dst/", ClassLocalWrite},
		{"xargs -i sh -c 'rm -rf /'", ClassBlocked},
		{"nice -n 5 ls", ClassSafe},
		{"flock /tmp/l ls", ClassSafe},
		{"flock /tmp/l -c 'rm -rf /'", ClassBlocked},
		{"flock 9", ClassSafe},
		{"command -v tar", ClassSafe},
		{"ionice -p 1", ClassSafe},
		{"watch -n 1 ls", ClassCodeExecution},
		{"watch 'rm -rf /'", ClassBlocked},
		{"sudo LD_PRELOAD=x.so ls", ClassSystemWrite},
		{"stdbuf -oL grep x f", ClassSafe},
		// Unknown options of write-class programs.
		{"tar --frobnicate -cf a.tar f", ClassUnknown},
		{"tar -cQf a.tar f", ClassUnknown},
		{"cp --frobnicate a b", ClassUnknown},
		{"mkdir -Q a", ClassUnknown},
		{"sort --frobnicate f", ClassUnknown},
		{"unzip -Y a.zip", ClassCodeExecution}, // unknown option, and extraction,
		{"zip --frobnicate a.zip f", ClassUnknown},
		{"gzip --frobnicate f", ClassUnknown},
		// Wrappers whose options are not known cannot say what runs.
		{"timeout --frobnicate 5 ls", ClassCodeExecution},
		{"env --frobnicate ls", ClassCodeExecution},
		{"timeout --frobnicate 5 rm -rf /", ClassBlocked},
		{"env -S '${CMD} x'", ClassCodeExecution},
		{"flock /tmp/l -c 'frobnicate'", ClassCodeExecution},
		// tar writes outside or deletes.
		{"tar -xPf a.tar", ClassSystemWrite},
		{"tar --remove-files -cf a.tar d", ClassDestructive},
		// Environment variables that name programs or options.
		{"EDITOR=vim crontab -e", ClassCodeExecution},
		{"GIT_PAGER=cat git log", ClassCodeExecution},
		{"FOO_OPTIONS=x ls", ClassCodeExecution},
		{"export LESSOPEN='|x %s'; less f", ClassCodeExecution},
		// A dynamic word given to a program with program-running options.
		{"sort $OPTS f", ClassCodeExecution},
		{"tar -cf a.tar {a,--to-command=sh}", ClassCodeExecution},
		{"zip -r a.zip *", ClassCodeExecution}, // a file named -TTsh
		{"zip -r a.zip ./*", ClassLocalWrite},
		// Command lines and programs in other arguments.
		{"trap 'sh -c id' EXIT", ClassCodeExecution},
		{"trap - EXIT", ClassSafe},
		{"trap '' INT", ClassSafe},
		{"hash -p ./evil ls", ClassCodeExecution},
		{"telnet host", ClassCodeExecution},
		{"mosh --ssh='sh -c id' host", ClassCodeExecution},
		{"openssl s_client -engine ./e.so -connect h:443", ClassCodeExecution},
		{"go list -toolexec=./x ./...", ClassCodeExecution},
		{"go list ./...", ClassSafe},
		{"python3 -m venv .venv", ClassCodeExecution},
		{"ag --pager='sh -c id' x", ClassCodeExecution},
		// Variables set other ways.
		{"read -r LESSOPEN < f; less x", ClassCodeExecution},
		{"export LESSOPEN; less x", ClassCodeExecution},
		{": ${PAGER:=x}; git -p log", ClassCodeExecution},
		{"printf -v PAGER %s x", ClassCodeExecution},
		{"read -r line < f", ClassSafe},
		{"printf '%s\\n' PAGER", ClassSafe},
		// Patterns and expansions that may become options.
		{"tar -cf a.tar ''{-I,sh}", ClassCodeExecution},
		{`rsync --{rsh=sh,x} a b:`, ClassCodeExecution},
		{`tar -cf a.tar ""*`, ClassCodeExecution},
		{"tar -cf a.tar x*", ClassLocalWrite},
		{"tar -cf a.tar -- \"$X\"", ClassSystemWrite},
		{"sort <(ls a) <(ls b)", ClassSafe},
		{"nice *", ClassCodeExecution},
		// git configuration that names programs.
		{"git config core.editor vim", ClassCodeExecution},
		{"git config --global core.pager less", ClassSystemWrite},
	}
	for _, tt := range tests {
		v := ClassifyShell(tt.cmd)
		if v.Class != tt.class {
			t.Errorf("ClassifyShell(%q) = %s (%s), want %s", tt.cmd, v.Class, v.Reason, tt.class)
		}
	}
}

// TestSedScript reads GNU sed scripts for their e commands and w files.
func TestSedScript(t *testing.T) {
	tests := []struct {
		script string
		execs  bool
		writes []string
		ok     bool
	}{
		{"s/a/b/g", false, nil, true},
		{"1e id", true, nil, true},
		{"s/x/id/e", true, nil, true},
		{"s/x/y/w out", false, []string{"out"}, true},
		{"/re/w /etc/x", false, []string{"/etc/x"}, true},
		{"$a\\\ntext e", false, nil, true},
		{"y/abc/xyz/", false, nil, true},
		{":a;N;$!ba;s/\\n/ /g", false, nil, true},
		{"1~2d; 3,+2p", false, nil, true},
		{"s/[/]/x/e", false, nil, false},
		{"s/a/b/k", false, nil, false},
		{"1{e id\n}", true, nil, true},
		{"\\%x%d", false, nil, true},
		{"s/a", false, nil, false},
		{"#n\np", false, nil, true},
	}
	for _, tt := range tests {
		execs, writes, ok := sedScript(tt.script)
		if execs != tt.execs || ok != tt.ok || len(writes) != len(tt.writes) {
			t.Errorf("sedScript(%q) = %v %q %v, want %v %q %v", tt.script, execs, writes, ok, tt.execs, tt.writes, tt.ok)
			continue
		}
		for i := range writes {
			if writes[i] != tt.writes[i] {
				t.Errorf("sedScript(%q) writes %q, want %q", tt.script, writes, tt.writes)
			}
		}
	}
}

// FuzzSedScript: the sed script reader never panics, what it reports as
// written is text of the script, and an e command on a line of its own,
// after a script it reads whose last line takes no text, is read as
// running a command.
func FuzzSedScript(f *testing.F) {
	for _, s := range []string{"s/a/b/g", "1e id", "s/x/id/e", "s/x/y/w out", "$a\\\ntext e", "y/abc/xyz/",
		":a;N;$!ba;s/\\n/ /g", "1~2d; 3,+2p", "s/[/]/x/e", "1{e id\n}", "\\%x%d", "#n\np", "/a/,/b/{s//x/;}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		execs, writes, ok := sedScript(s)
		for _, w := range writes {
			if !strings.Contains(s, w) {
				t.Fatalf("sedScript(%q) writes %q, which is not in the script", s, w)
			}
		}
		if ok && !execs && !strings.ContainsAny(s, "\\") {
			if e2, _, ok2 := sedScript(s + "\ne"); ok2 && !e2 && !endsInText(s) {
				t.Fatalf("sedScript(%q + \"\\ne\") runs nothing", s)
			}
		}
	})
}

// endsInText reports whether the last line of a sed script is a comment or
// the argument of a command that takes the rest of the line (a, i, c, r,
// R, w, W, labels), after which "\ne" may still be text.
func endsInText(s string) bool {
	return strings.ContainsAny(s, "#aicrRwW:btTv{}")
}
