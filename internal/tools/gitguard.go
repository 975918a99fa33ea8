package tools

import (
	"strconv"
	"strings"
)

// gitGuard is configuration every shell command's git runs with. It is
// passed in GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, which git
// reads after the system, global, repository and worktree files, so each
// entry beats whatever a repository's own .git/config (or a file it
// includes) says. Each neutralises a key through which a repository's
// files name a program that runs on an everyday command (git status, diff,
// add, commit, log, show, branch, checkout): a chat can write those
// files, and the classifier cannot see every way it does (an extracted
// archive, a symlink). guard_test.go proves each entry against the real
// git.
//
// What git offers no switch for — drivers that .gitattributes selects
// (filter.<x>.clean/smudge/process, diff.<x>.command/textconv,
// merge.<x>.driver), diff.external, remote.<x>.uploadpack/receivepack —
// is read from the repository before a git command is rated
// (gitrepo.go): a command whose repositories define one is
// code_execution. Keys this guard overrides are left to it there.
var gitGuard = [][2]string{
	// Symlinks in a tree (from git apply, checkout, merge, stash, clone)
	// are written as plain files holding the target, so a patch cannot
	// leave a second name for .git/config behind for a later write.
	{"core.symlinks", "false"},
	// A bare repository (any directory holding config, HEAD, objects) is
	// used only when named with --git-dir or GIT_DIR, which the classifier
	// rates code_execution: its config is a file the classifier cannot
	// tell from any other.
	{"safe.bareRepository", "explicit"},
	// Hooks: .git/hooks/* and a planted core.hooksPath.
	{"core.hooksPath", "/dev/null"},
	// fsmonitor runs its command on git status, diff, add, commit.
	{"core.fsmonitor", "false"},
	// Pagers and editors (git commit without -m, rebase -i, git -p).
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"interactive.diffFilter", "cat"},
	// Signing runs gpg.program on commit and tag; log.showSignature runs
	// it on git log and show.
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"push.gpgSign", "false"},
	{"log.showSignature", "false"},
	{"gpg.format", "openpgp"},
	{"gpg.program", "gpg"},
	{"gpg.openpgp.program", "gpg"},
	{"gpg.x509.program", "gpgsm"},
	{"gpg.ssh.program", "ssh-keygen"},
	// Programs run on fetch and push: an empty credential.helper empties
	// the list (URL-scoped helpers too), an empty core.askPass falls back
	// to the terminal, which a job has not.
	{"credential.helper", ""},
	{"core.askPass", ""},
	{"core.sshCommand", "ssh"},
	{"protocol.ext.allow", "never"},
	// git help (and git CMD --help) shows help as a man page unless told
	// otherwise, not with a browser the repository names. (A repository's
	// man.viewer still comes before man, and --web still asks for its
	// browser: the classifier rates git help code_execution.)
	{"help.format", "man"},
}

// gitGuardVars are environment variables set with the guard: GIT_PAGER
// beats every core.pager and pager.<cmd> entry, an
// empty GIT_PROXY_COMMAND turns core.gitProxy off, and
// GIT_TERMINAL_PROMPT=0 makes a missing credential fail at once.
var gitGuardVars = []string{"GIT_PAGER=cat", "GIT_PROXY_COMMAND=", "GIT_TERMINAL_PROMPT=0"}

// withGitGuard returns env with the git guard added. Configuration the
// environment already passes in GIT_CONFIG_COUNT entries is kept, before
// the guard's; GIT_CONFIG_PARAMETERS, which git reads after them, is
// dropped, and so are GIT_CONFIG_KEY_n/VALUE_n entries beyond a count
// that is not a number. The variables in gitGuardVars replace any of the
// same name.
func withGitGuard(env []string) []string {
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if k, err := strconv.Atoi(v); err == nil && k >= 0 && k < 1<<16 {
				n = k
			}
		}
	}
	out := make([]string, 0, len(env)+2*len(gitGuard)+len(gitGuardVars)+1)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "GIT_CONFIG_COUNT" || name == "GIT_CONFIG_PARAMETERS":
			continue
		case strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
			i, err := strconv.Atoi(name[strings.LastIndexByte(name, '_')+1:])
			if err != nil || i >= n {
				continue
			}
		case guardVar(name):
			continue
		}
		out = append(out, kv)
	}
	for i, kv := range gitGuard {
		k := strconv.Itoa(n + i)
		out = append(out, "GIT_CONFIG_KEY_"+k+"="+kv[0], "GIT_CONFIG_VALUE_"+k+"="+kv[1])
	}
	out = append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(n+len(gitGuard)))
	return append(out, gitGuardVars...)
}

func guardVar(name string) bool {
	for _, kv := range gitGuardVars {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}
