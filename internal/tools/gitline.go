package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Git runs alone (issue 21, the configuration race).
//
// The shell tool rates a git command by the configuration of the
// repositories it may use (gitrepo.go) and reads them again right before
// the line runs, but git reads its configuration itself, later: whatever
// writes a driver into .git/config between that read and git's own
// plants a program that runs with no question. Git has no switch that
// turns attribute-selected drivers off (gitguard.go says which keys the
// guard can and cannot neutralise), so the writers are what is closed:
//
//   - in the line itself: a command that writes files the classifier
//     cannot list from its words (a recursive copy, mv of a directory,
//     rsync, ln, an extractor, a program it does not know) makes a line
//     that runs git code_execution (gitUse.writer), since one of the
//     files may be git's configuration, written before git reads it;
//     writes the words name (redirections, tee, touch, mkdir, sed -i,
//     cp/mv/install of regular files) are rated by those names already;
//   - beside it, in the same run: a line that runs git takes the tools'
//     gate exclusively, from the second reading of its repositories until
//     it ends, and every other shell line, write_file and patch take it
//     shared while they run (gitGate), so no tool call of the run writes
//     while git reads;
//   - after it: a process an earlier command left running (cmd &) could
//     write at any moment, so a line that runs git while any process of
//     the job's jail is alive is code_execution, and refused at Run if
//     one appeared since the rating (jobBusy). Inside the jail nothing
//     can leave its process group (sandbox.Spec.LockSession), so the
//     jail's groups are every process a job left.

// gitGate orders the run's tool calls around lines that run git: those
// hold it exclusively, every other writing call shared. Waiting ends with
// the call's context. A waiting exclusive holder keeps new shared holders
// out, so a stream of writes cannot starve git. The zero value is ready.
type gitGate struct {
	mu       sync.Mutex
	shared   int
	held     bool // exclusively
	waiting  int  // exclusive holders waiting
	released chan struct{}
}

// lock takes the gate, exclusively or shared, and returns its release.
func (g *gitGate) lock(ctx context.Context, exclusive bool) (func(), error) {
	counted := false
	for {
		g.mu.Lock()
		if g.released == nil {
			g.released = make(chan struct{})
		}
		free := !g.held && (exclusive && g.shared == 0 || !exclusive && (g.waiting == 0 || counted))
		if free && exclusive {
			g.held = true
			if counted {
				g.waiting--
			}
			g.mu.Unlock()
			return func() { g.release(true) }, nil
		}
		if free {
			g.shared++
			g.mu.Unlock()
			return func() { g.release(false) }, nil
		}
		if exclusive && !counted {
			g.waiting++
			counted = true
		}
		ch := g.released
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if counted {
				g.mu.Lock()
				g.waiting--
				g.broadcast()
				g.mu.Unlock()
			}
			return nil, ctx.Err()
		}
	}
}

func (g *gitGate) release(exclusive bool) {
	g.mu.Lock()
	if exclusive {
		g.held = false
	} else {
		g.shared--
	}
	g.broadcast()
	g.mu.Unlock()
}

// broadcast wakes every waiter; g.mu is held.
func (g *gitGate) broadcast() {
	if g.released != nil {
		close(g.released)
	}
	g.released = make(chan struct{})
}

// programInLine classifies a program of a line whose git use is being
// recorded, and notes it in c.gitUse.writer when it writes files its
// words do not list.
func (c *classifier) programInLine(name string, args []word) segResult {
	if c.gitUse == nil || name == "git" {
		return c.program(name, args)
	}
	saved := c.best
	c.best = ShellVerdict{}
	r := c.program(name, args)
	mine := c.best
	c.best = saved
	if mine.Class != "" {
		c.raise(mine.Class, mine.Argv0, mine.Reason)
	}
	s := Severity(mine.Class)
	if c.gitUse.writer == "" && s >= Severity(ClassLocalWrite) && s < Severity(ClassCodeExecution) && !c.listedWrites(name, args) {
		c.gitUse.writer = name
	}
	return r
}

// listedWrites reports whether name writes only files its words name —
// each of which the classifier rated by its name and, through the
// symlinks that exist, by what it leads to — so that a write into git's
// configuration would have shown.
func (c *classifier) listedWrites(name string, args []word) bool {
	for _, a := range args {
		if a.dyn || a.mayOpt {
			return false
		}
	}
	switch name {
	case "mkdir", "touch", "tee", "sed", "rmdir", "mktemp":
		return true
	case "cp", "mv", "install":
	default:
		return false
	}
	s := specFor(name)
	if s == nil || c.cwdMoved || len(c.cwds) > 0 || c.workDir == "" {
		return false
	}
	opts := s.scan(args)
	for _, o := range []string{"-r", "-R", "-a", "--recursive", "--archive", "-d", "--directory", "-D"} {
		if opts.seen[o] {
			return false
		}
	}
	sources := opts.operands
	if len(opts.writes) == 0 && len(opts.vals["-t"]) == 0 && len(opts.vals["--target-directory"]) == 0 {
		if len(sources) < 2 {
			return false
		}
		sources = sources[:len(sources)-1]
	}
	// Each source is a regular file now: a copy or move of it writes one
	// file, at the destination the words name. (A directory carries
	// whatever it holds, a .git included.)
	for _, src := range sources {
		p := src.v
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.workDir, p)
		}
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// gitVerdict is gitRepoVerdict for this configuration, raised to
// code_execution as well when a process of the job's jail is running
// (one an earlier command left could rewrite git's configuration while
// git reads it).
func (c *config) gitVerdict(v ShellVerdict, g *gitUse, home string) ShellVerdict {
	v2 := gitRepoVerdict(v, g, c.workDir, home)
	if v2 != v || len(g.dirs) == 0 || Severity(v.Class) >= Severity(ClassCodeExecution) {
		return v2
	}
	if c.sandbox != nil && c.sandbox.Running() {
		return ShellVerdict{Class: ClassCodeExecution, Argv0: "git", Reason: "the line runs git while a process an earlier command left running is alive, " +
			"which could write git's configuration after it is checked"}
	}
	return v2
}

// runsGit reports whether command runs git (as its rating records it).
func runsGit(command, workDir string) bool {
	g := &gitUse{}
	classifyLine(command, workDir, 0, g)
	return len(g.dirs) > 0
}

// gitCeiling returns env with GIT_CEILING_DIRECTORIES set to the parent of
// workDir (symlinks resolved, as git compares it): git's discovery, which
// walks up from where it starts, then stops at the working directory, so
// a confined job never uses — nor runs the drivers of — a repository
// above it, whose configuration the shell's check does not read (a
// directory of chats inside a repository, a planted .git next to a
// chat's directory). The classifier keeps the variable: assigning or
// unsetting any GIT_* variable but identities is code_execution
// (execVar, gitPlainVars), and so is git started outside the working
// directory (cd .., -C /elsewhere).
func gitCeiling(env []string, workDir string) []string {
	dir := workDir
	if r, err := filepath.EvalSymlinks(workDir); err == nil {
		dir = r
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_CEILING_DIRECTORIES=") && !strings.HasPrefix(kv, "GIT_DISCOVERY_ACROSS_FILESYSTEM=") {
			out = append(out, kv)
		}
	}
	return append(out, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
}

// GateOthers wraps each of others (a run's tools that are not its
// built-ins: sub-agents, MCP tools, tools a program adds) so that its calls
// hold the git gate of the run whose built-ins are builtins, shared, for
// their whole length. A sub-agent writes in the run's directory from
// processes of its own, and an MCP server may write there on a call, both
// beside this run's tools: without the gate they could plant a driver
// while a line runs git. What such a server writes outside its calls is
// not covered (docs/SECURITY.md). Without the built-ins' shell tool,
// others are returned as they are.
func GateOthers(builtins, others []Tool) []Tool {
	var g *gitGate
	for _, t := range builtins {
		if s, ok := t.(*shellTool); ok {
			g = &s.c.gate
		}
	}
	if g == nil {
		return others
	}
	out := make([]Tool, len(others))
	for i, t := range others {
		out[i] = gatedTool{Tool: t, g: g}
	}
	return out
}

// gatedTool holds the git gate shared while its tool runs.
type gatedTool struct {
	Tool
	g *gitGate
}

func (t gatedTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	release, err := t.g.lock(ctx, false)
	if err != nil {
		return Result{}, err
	}
	defer release()
	return t.Tool.Run(ctx, args)
}
