package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// reportTypes lists the types with the most methods (all methods, exported
// or not, of non-test files), by package.
func reportTypes(w io.Writer, funcs []fn, top int) {
	count := map[string]int{}
	files := map[string]map[string]bool{}
	for _, f := range funcs {
		recv, _, ok := strings.Cut(f.name, ".")
		if !ok {
			continue
		}
		k := f.pkg + "." + recv
		count[k]++
		if files[k] == nil {
			files[k] = map[string]bool{}
		}
		file, _, _ := strings.Cut(f.pos, ":")
		files[k][file] = true
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	fmt.Fprintf(w, "\n## The %d types with the most methods (non-test files)\nmethods  files  type\n", top)
	for i, k := range keys {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%7d  %5d  %s\n", count[k], len(files[k]), k)
	}
}

// pathEntry is where a chat message enters and where its reply leaves the
// Telegram front end: the functions the static Telegram path starts from.
var pathEntries = []string{"Bot.handleUpdate", "chat.deliver", "chat.progress"}

// reportTelegramPath measures the Telegram path statically: from the
// entries, every function of the packages under bot/ (bot/bottest and tests
// excluded) reachable through calls, a call resolved by name to every
// function or method of that name (an over-approximation, the same before
// and after a refactor). It prints the functions and files reached and,
// per package, how many.
func reportTelegramPath(w io.Writer, root string) error {
	type decl struct {
		key, pkg, file string
		calls          []string
	}
	var decls []*decl
	byName := map[string][]*decl{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(filepath.Join(root, "bot"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "bottest" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, dc := range f.Decls {
			fd, ok := dc.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				key = recvName(fd.Recv.List[0].Type) + "." + key
			}
			dd := &decl{key: key, pkg: filepath.ToSlash(filepath.Dir(rel)), file: rel}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					switch fun := c.Fun.(type) {
					case *ast.Ident:
						dd.calls = append(dd.calls, fun.Name)
					case *ast.SelectorExpr:
						dd.calls = append(dd.calls, fun.Sel.Name)
					}
				}
				return true
			})
			decls = append(decls, dd)
			_, name, found := strings.Cut(key, ".")
			if !found {
				name = key
			}
			byName[name] = append(byName[name], dd)
		}
		return nil
	})
	if err != nil {
		return err
	}
	seen := map[*decl]bool{}
	var queue []*decl
	for _, d := range decls {
		for _, e := range pathEntries {
			if d.key == e && !seen[d] {
				seen[d] = true
				queue = append(queue, d)
			}
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, c := range d.calls {
			for _, t := range byName[c] {
				if !seen[t] {
					seen[t] = true
					queue = append(queue, t)
				}
			}
		}
	}
	files, pkgs := map[string]bool{}, map[string]int{}
	for d := range seen {
		files[d.file] = true
		pkgs[d.pkg]++
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\n## The Telegram path (static, from %s)\n%d functions in %d files of %d packages reachable\n", strings.Join(pathEntries, ", "), len(seen), len(files), len(pkgs))
	for _, p := range names {
		fmt.Fprintf(w, "%7d  %s\n", pkgs[p], p)
	}
	return nil
}
