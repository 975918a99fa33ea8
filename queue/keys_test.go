package queue

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"":           "{odek}:",
		"odek:":      "{odek}:",
		"team":       "{team}",
		"a:b:":       "{a:b}:",
		"{q}:":       "{q}:",
		"x{q}:":      "x{q}:",
		"{}:":        "{{}}:", // an empty tag is no tag
		"odek:{a}b:": "odek:{a}b:",
	} {
		if got := KeyPrefix(in); got != want {
			t.Errorf("KeyPrefix(%q) = %q, want %q", in, got, want)
		}
		if !hasHashTag(KeyPrefix(in)) {
			t.Errorf("KeyPrefix(%q) = %q has no hash tag", in, KeyPrefix(in))
		}
	}
}

// TestEveryScriptCallDeclaresKeys reads the package's source: every call
// of a Lua script (Script.Run/RunRO/Eval/EvalSha..., a pipeline's EvalSha,
// the coalescer's run/runAll) must pass keys, never nil or an empty
// literal. A script called without keys is sent by a cluster client to any
// node, where the keys it builds are in the wrong slot. Checked at run time
// too: the coalescer refuses such a call (TestCoalescerRefusesNoKeys), and
// the conformance suite runs on a real cluster.
func TestEveryScriptCallDeclaresKeys(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	sub, _ := filepath.Glob("queuetest/*.go")
	files = append(files, sub...)
	keyArg := map[string]int{ // method name → index of the keys argument
		"Run": 2, "RunRO": 2, "Eval": 2, "EvalRO": 2, "EvalSha": 2, "EvalShaRO": 2, // script.X(ctx, c, keys) or pipe.EvalSha(ctx, sha, keys)
		"run": 2, "runAll": 2, "runDurable": 2, // co.run(ctx, script, keys, ...), cw.runDurable(...)
		"call": 3, // co.call(ctx, durable, script, keys, args)
	}
	checked := 0
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			i, ok := keyArg[sel.Sel.Name]
			if !ok || len(call.Args) <= i {
				return true
			}
			if sel.Sel.Name == "Run" || sel.Sel.Name == "run" || sel.Sel.Name == "runAll" || sel.Sel.Name == "runDurable" || sel.Sel.Name == "call" {
				// Only script runs: the receiver names a script or a coalescer.
				recv := exprText(sel.X)
				if !strings.HasSuffix(recv, "Script") && !strings.HasSuffix(recv, "co") && !strings.HasSuffix(recv, "cw") && !strings.HasSuffix(recv, "NX") {
					return true
				}
			}
			checked++
			switch a := call.Args[i].(type) {
			case *ast.Ident:
				if a.Name == "nil" {
					t.Errorf("%s: %s.%s called with nil keys", fset.Position(call.Pos()), exprText(sel.X), sel.Sel.Name)
				}
			case *ast.CompositeLit:
				if len(a.Elts) == 0 {
					t.Errorf("%s: %s.%s called with no keys", fset.Position(call.Pos()), exprText(sel.X), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 9 {
		t.Fatalf("found only %d script calls; the check no longer sees them", checked)
	}
}

func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	}
	return ""
}

func TestCoalescerRefusesNoKeys(t *testing.T) {
	co := &coalescer{}
	if _, err := co.run(context.Background(), ackScript, nil, "x"); !errors.Is(err, errNoKeys) {
		t.Fatalf("run without keys: %v", err)
	}
	_, errs := co.runAll(context.Background(), heartbeatScript, nil, [][]any{{"x"}})
	if !errors.Is(errs[0], errNoKeys) {
		t.Fatalf("runAll without keys: %v", errs[0])
	}
}
