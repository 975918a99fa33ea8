package tools

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// This file feeds ClassifyShell from mvdan.cc/sh's bash parser: it parses
// the line and walks the syntax tree, handing every simple command (words
// with quotes removed) and every redirection to the classification tables
// in classify.go. It never executes or expands anything; the text of an
// expansion ($VAR, ${...}, $(...), `...`) stands for itself and marks its
// word as decided at run time.

// shellParsers reuses parsers: a Parser may be reused, not shared.
var shellParsers = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}}

func parseShell(s string) (*syntax.File, error) {
	p := shellParsers.Get().(*syntax.Parser)
	defer shellParsers.Put(p)
	return p.Parse(strings.NewReader(s), "")
}

// line classifies a list of statements the shell reads as one program (a
// command line, or the body of a substitution): first the command and
// process substitutions anywhere in it, each as a program of its own, then
// the statements in order. An interpreter in the line is blocked when a
// substitution in the same line downloads something (sh <(curl ...)).
func (c *classifier) line(stmts []*syntax.Stmt) {
	fetch := false
	for _, s := range stmts {
		syntax.Walk(s, func(n syntax.Node) bool {
			var body []*syntax.Stmt
			switch n := n.(type) {
			case *syntax.ParamExp:
				// ${NAME:=value} assigns.
				if n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) &&
					n.Param != nil && execVar(n.Param.Value) {
					c.raise(ClassCodeExecution, n.Param.Value, "assignment to "+n.Param.Value+" changes what runs")
				}
				return true
			case *syntax.CmdSubst:
				body = n.Stmts
			case *syntax.ProcSubst:
				body = n.Stmts
			default:
				return true
			}
			v, fetches := c.substitution(body)
			c.raise(v.Class, v.Argv0, "in command substitution: "+v.Reason)
			fetch = fetch || fetches
			return false // the substitution walked its own nested ones
		})
	}
	saved := c.lineFetch
	c.lineFetch = fetch
	c.stmts(stmts)
	c.lineFetch = saved
	c.fetched = c.fetched || fetch
}

// substitution classifies the body of $(...), `...`, <(...) or >(...) with
// a state of its own (a cd inside does not move the outer line) and
// reports whether it downloads something.
func (c *classifier) substitution(body []*syntax.Stmt) (ShellVerdict, bool) {
	if c.depth+1 > maxShellDepth {
		return ShellVerdict{Class: ClassUnknown, Reason: "substitutions nested too deeply to classify"}, false
	}
	sub := &classifier{workDir: c.workDir, depth: c.depth + 1, src: c.src, cwds: c.cwds, cwdMoved: c.cwdMoved, gitUse: c.gitUse}
	sub.best = ShellVerdict{Class: ClassSafe, Reason: "empty command"}
	sub.line(body)
	return sub.best, sub.fetched
}

// stmts classifies statements in order and merges what they do.
func (c *classifier) stmts(list []*syntax.Stmt) segResult {
	var r segResult
	for _, s := range list {
		r = r.merge(c.stmt(s))
	}
	return r
}

// merge combines the results of commands that share a pipeline position
// (a subshell, a group, a compound command): any of them may download or
// read stdin as code.
func (r segResult) merge(o segResult) segResult {
	if r.argv0 == "" || o.interpreter && !r.interpreter {
		r.argv0, r.reason = o.argv0, o.reason
	}
	r.fetch = r.fetch || o.fetch
	r.interpreter = r.interpreter || o.interpreter
	return r
}

// stmt classifies one statement: its command and its redirections.
func (c *classifier) stmt(s *syntax.Stmt) segResult {
	var r segResult
	switch x := s.Cmd.(type) {
	case nil: // redirections only
	case *syntax.CallExpr:
		r = c.call(x)
	case *syntax.BinaryCmd:
		if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
			r = c.pipeline(x)
		} else {
			r = c.stmt(x.X).merge(c.stmt(x.Y))
		}
	case *syntax.Subshell:
		r = c.stmts(x.Stmts)
	case *syntax.Block:
		r = c.stmts(x.Stmts)
	case *syntax.IfClause:
		for cl := x; cl != nil; cl = cl.Else {
			r = r.merge(c.stmts(cl.Cond)).merge(c.stmts(cl.Then))
		}
	case *syntax.WhileClause:
		r = c.stmts(x.Cond).merge(c.stmts(x.Do))
	case *syntax.ForClause:
		name := "for"
		if x.Select {
			name = "select"
		}
		c.raise(ClassSafe, name, "shell control flow")
		r = segResult{argv0: name, reason: "shell control flow"}.merge(c.stmts(x.Do))
	case *syntax.CaseClause:
		c.raise(ClassSafe, "case", "shell control flow")
		r = segResult{argv0: "case", reason: "shell control flow"}
		for _, it := range x.Items {
			r = r.merge(c.stmts(it.Stmts))
		}
	case *syntax.FuncDecl:
		// The body runs whenever the function is called; classify it as
		// if it ran here.
		c.stmt(x.Body)
	case *syntax.TimeClause:
		if x.Stmt != nil {
			r = c.stmt(x.Stmt)
		}
	case *syntax.CoprocClause:
		r = c.stmt(x.Stmt)
	case *syntax.DeclClause:
		r = c.decl(x)
	case *syntax.LetClause:
		c.raise(ClassSafe, "let", "let only does arithmetic")
		r = segResult{argv0: "let"}
	case *syntax.TestClause:
		c.raise(ClassSafe, "[[", "[[ only tests")
		r = segResult{argv0: "[["}
	case *syntax.ArithmCmd:
		// Arithmetic evaluates variable values as expressions, and an
		// array subscript in one can run a command.
		c.raise(ClassUnknown, "((", "arithmetic command on run-time values")
		r = segResult{argv0: "(("}
	default:
		c.raise(ClassUnknown, "", "unrecognised shell construct")
	}
	for _, rd := range s.Redirs {
		c.redirect(rd, r.argv0)
	}
	return r
}

// pipeline classifies a | b | ...: a download piped into an interpreter is
// blocked.
func (c *classifier) pipeline(b *syntax.BinaryCmd) segResult {
	var elems []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if x, ok := s.Cmd.(*syntax.BinaryCmd); ok && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) {
			flatten(x.X)
			flatten(x.Y)
			for _, rd := range s.Redirs {
				c.redirect(rd, "")
			}
			return
		}
		elems = append(elems, s)
	}
	flatten(b.X)
	flatten(b.Y)
	var agg segResult
	fetched := false
	for _, e := range elems {
		r := c.stmt(e)
		if fetched && r.interpreter {
			c.raise(ClassBlocked, r.argv0, "downloaded content piped into "+r.argv0)
		}
		fetched = fetched || r.fetch
		agg = agg.merge(r)
	}
	return agg
}

// call classifies a simple command: its prefix assignments, then its
// words.
func (c *classifier) call(x *syntax.CallExpr) segResult {
	for _, a := range x.Assigns {
		c.assign(a)
	}
	if len(x.Args) == 0 {
		return segResult{}
	}
	words := make([]word, len(x.Args))
	for i, w := range x.Args {
		words[i] = c.word(w)
	}
	r := c.command(words)
	if r.interpreter && c.lineFetch {
		c.raise(ClassBlocked, r.argv0, "downloaded content run by "+r.argv0)
	}
	c.fetched = c.fetched || r.fetch
	return r
}

// assign checks one NAME=value (prefix or declaration) for a variable that
// changes what runs.
func (c *classifier) assign(a *syntax.Assign) {
	if a.Name == nil {
		return
	}
	// A declaration without a value (export PAGER) still hands the
	// variable, set however, to every later program.
	if execVar(a.Name.Value) {
		c.raise(ClassCodeExecution, a.Name.Value, "assignment to "+a.Name.Value+" changes what runs")
	}
}

// decl classifies export, declare, local, readonly, typeset and nameref.
func (c *classifier) decl(x *syntax.DeclClause) segResult {
	name := x.Variant.Value
	for _, a := range x.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			// An option such as -x, or a word that may expand to
			// NAME=value at run time.
			if w := c.word(a.Value); w.dyn {
				c.raise(ClassUnknown, name, name+" of a name decided at run time")
			}
			continue
		}
		c.assign(a)
	}
	c.raise(ClassSafe, name, name+" sets shell variables")
	return segResult{argv0: name}
}

// redirect classifies one redirection of the command argv0.
func (c *classifier) redirect(rd *syntax.Redirect, argv0 string) {
	switch rd.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return
	}
	if rd.Word == nil {
		return
	}
	target := c.word(rd.Word)
	if rd.Op == syntax.DplOut && (isDigits(target.v) || target.v == "-") && !target.dyn {
		return // fd duplication
	}
	class, why := c.writeTarget(target.v, target.dyn)
	c.raise(class, argv0, "redirection to "+why)
}

// word returns w with quotes and escapes removed; expansions keep their
// source text and mark the word dynamic.
func (c *classifier) word(w *syntax.Word) word {
	var b strings.Builder
	dyn := false
	for _, p := range w.Parts {
		c.part(&b, p, false, &dyn)
	}
	return word{v: b.String(), dyn: dyn, mayOpt: mayBeOption(w)}
}

// mayBeOption reports whether w could become, at run time, one or more
// words of which one starts with '-' although its text does not show it:
// an unquoted parameter, command or arithmetic expansion anywhere (field
// splitting can cut a word that starts with '-' out of it), a quoted one
// with no text before it, or a pathname or brace pattern with no text or
// only a dash before it (a file in the directory may be named
// "--to-command=sh"; ""{-I,sh} is two words, -I and sh).
func mayBeOption(w *syntax.Word) bool {
	prefix := "" // the static text before the current part
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if i := strings.IndexAny(v, "*?[{"); i >= 0 && (v[i] != '{' || strings.ContainsAny(v[i:], ",.")) {
				if t := prefix + v[:i]; t == "" || t[0] == '-' {
					return true
				}
			}
			prefix += v
		case *syntax.SglQuoted:
			prefix += p.Value
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, lit := q.(*syntax.Lit)
				if !lit {
					if prefix == "" || prefix[0] == '-' {
						return true
					}
					continue
				}
				prefix += l.Value
			}
		case *syntax.ProcSubst:
			prefix += "/dev/fd/"
		default: // ParamExp, CmdSubst, ArithmExp, ExtGlob, BraceExp
			return true
		}
	}
	return false
}

func (c *classifier) part(b *strings.Builder, p syntax.WordPart, inDouble bool, dyn *bool) {
	switch p := p.(type) {
	case *syntax.Lit:
		b.WriteString(unescapeLit(p.Value, inDouble))
	case *syntax.SglQuoted:
		if !p.Dollar {
			b.WriteString(p.Value)
			return
		}
		// $'...' decodes backslash escapes; the shell cuts at a NUL.
		s, _, err := expand.Format(nil, p.Value, nil)
		if err != nil {
			b.WriteString(p.Value)
			*dyn = true
			return
		}
		s, _, _ = strings.Cut(s, "\x00")
		b.WriteString(s)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			c.part(b, q, true, dyn)
		}
	case *syntax.ProcSubst:
		// The command sees a path to a pipe.
		b.WriteString("/dev/fd/63")
		*dyn = true
	default: // ParamExp, CmdSubst, ArithmExp, ExtGlob, BraceExp
		b.WriteString(c.src[p.Pos().Offset():p.End().Offset()])
		*dyn = true
	}
}

// unescapeLit removes the backslashes of an unquoted literal, or inside
// double quotes those before $ ` " and \ (line continuations are gone
// already).
func unescapeLit(s string, inDouble bool) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!inDouble || strings.IndexByte("$`\"\\", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// salvage classifies a line the parser rejects. Bash runs none of a line
// with a syntax error, but a real shell may accept what this parser does
// not, so the line is unknown, and more severe if any piece of it between
// operator characters would be: each piece is parsed alone, or, when that
// fails too, read as plain words with its quote characters dropped.
func salvage(cmdline, workDir string, depth int) ShellVerdict {
	c := &classifier{workDir: workDir, depth: depth}
	c.best = ShellVerdict{Class: ClassUnknown, Reason: "cannot parse the command line"}
	if depth+1 > maxShellDepth {
		return c.best
	}
	// Split at operator characters, remembering which one came before
	// each piece: the first word after a '>' is a file written to.
	type piece struct {
		text      string
		afterRedr bool
		// glued marks a piece whose last word runs into a substitution.
		glued bool
	}
	var pieces []piece
	start, prev := 0, byte(0)
	for i := 0; i <= len(cmdline); i++ {
		if i < len(cmdline) && strings.IndexByte(";&|()<>\n`{}", cmdline[i]) < 0 {
			continue
		}
		if strings.TrimSpace(cmdline[start:i]) != "" {
			glued := i < len(cmdline) && strings.IndexByte("`({", cmdline[i]) >= 0 && !isSpace(cmdline[i-1])
			pieces = append(pieces, piece{cmdline[start:i], prev == '>', glued})
		} else if prev == '>' && i < len(cmdline) && (cmdline[i] == '`' || cmdline[i] == '(') {
			c.raise(ClassSystemWrite, "", "cannot parse the command line; a part of it: redirection to a path decided at run time")
		}
		if i < len(cmdline) {
			prev = cmdline[i]
		}
		start = i + 1
	}
	unquote := strings.NewReplacer(`'`, "", `"`, "", `\`, "", "$", "")
	for _, pc := range pieces {
		p := pc.text
		if pc.afterRedr {
			t := strings.Fields(p)[0]
			dyn := strings.ContainsAny(t, "$`") || pc.glued && len(strings.Fields(p)) == 1
			cl, why := c.writeTarget(unquote.Replace(t), dyn)
			if Severity(cl) > Severity(ClassUnknown) {
				c.raise(cl, "", "cannot parse the command line; a part of it: redirection to "+why)
			}
			p = strings.TrimSpace(p)[len(t):]
		}
		var v ShellVerdict
		if f, err := parseShell(p); err == nil {
			pc := &classifier{workDir: workDir, depth: depth + 1, src: p}
			pc.best = ShellVerdict{Class: ClassSafe, Reason: "empty command"}
			pc.line(f.Stmts)
			v = pc.best
		} else {
			pc := &classifier{workDir: workDir, depth: depth + 1}
			pc.best = ShellVerdict{Class: ClassSafe, Reason: "empty command"}
			var words []word
			for _, f := range strings.Fields(unquote.Replace(p)) {
				words = append(words, word{v: f})
			}
			pc.command(words)
			v = pc.best
		}
		if Severity(v.Class) > Severity(ClassUnknown) {
			c.raise(v.Class, v.Argv0, "cannot parse the command line; a part of it: "+v.Reason)
		}
	}
	return c.best
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }
