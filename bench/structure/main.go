// Command structure prints a few shape figures of the repository, so that a
// refactor can be compared before and after (docs/ARCHITECTURE.md quotes
// them): non-test Go lines per package, the largest functions, the exported
// names of each public package and the number of map[string]any types
// written out. It reads source with go/parser only; nothing is built.
//
//	go run ./bench/structure [-root .] [-top 15]
//
// Directories named testdata, hidden directories, node_modules and nested
// modules (a directory with its own go.mod below the root) are skipped.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

// publicRoots are the top-level packages (and their subpackages) whose
// exported names form the module's Go API.
var publicRoots = []string{"agent", "artifacts", "events", "mcpclient", "queue", "worker", "bot"}

type pkgStat struct {
	dir       string
	lines     int // non-test .go lines
	testLines int
	files     int
	exported  int // top-level exported names (non-test files)
	methods   int // exported methods on exported types (non-test files)
	mapAny    int // map[string]any / map[string]interface{} in non-test files
	mapAnyT   int // the same in test files
}

type fn struct {
	name  string
	pkg   string
	lines int
	pos   string
}

func main() {
	root := flag.String("root", ".", "repository root (the directory holding go.mod)")
	top := flag.Int("top", 15, "how many of the largest functions to list")
	flag.Parse()

	stats, funcs, err := scan(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "structure:", err)
		os.Exit(1)
	}
	report(os.Stdout, stats, funcs, *top)
	reportTypes(os.Stdout, funcs, 10)
	if err := reportTelegramPath(os.Stdout, *root); err != nil {
		fmt.Fprintln(os.Stderr, "structure:", err)
		os.Exit(1)
	}
	if err := reportSettings(os.Stdout, *root); err != nil {
		fmt.Fprintln(os.Stderr, "structure:", err)
		os.Exit(1)
	}
}

func scan(root string) (map[string]*pkgStat, []fn, error) {
	stats := map[string]*pkgStat{}
	var funcs []fn
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		st := stats[dir]
		if st == nil {
			st = &pkgStat{dir: dir}
			stats[dir] = st
		}
		isTest := strings.HasSuffix(path, "_test.go")
		n := strings.Count(string(src), "\n")
		if len(src) > 0 && src[len(src)-1] != '\n' {
			n++
		}
		maps := countMapAny(f)
		if isTest {
			st.testLines += n
			st.mapAnyT += maps
			return nil
		}
		st.lines += n
		st.files++
		st.mapAny += maps
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				lines := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv := recvName(d.Recv.List[0].Type)
					name = recv + "." + name
					if d.Name.IsExported() && ast.IsExported(recv) {
						st.methods++
					}
				} else if d.Name.IsExported() {
					st.exported++
				}
				p := fset.Position(d.Pos())
				funcs = append(funcs, fn{name: name, pkg: dir, lines: lines, pos: fmt.Sprintf("%s:%d", rel, p.Line)})
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							st.exported++
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								st.exported++
							}
						}
					}
				}
			}
		}
		return nil
	})
	return stats, funcs, err
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// countMapAny counts map types with a string key and an any (or empty
// interface) value written in f.
func countMapAny(f *ast.File) int {
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		m, ok := node.(*ast.MapType)
		if !ok {
			return true
		}
		k, ok := m.Key.(*ast.Ident)
		if !ok || k.Name != "string" {
			return true
		}
		switch v := m.Value.(type) {
		case *ast.Ident:
			if v.Name == "any" {
				n++
			}
		case *ast.InterfaceType:
			if v.Methods == nil || len(v.Methods.List) == 0 {
				n++
			}
		}
		return true
	})
	return n
}

func isPublic(dir string) bool {
	for _, r := range publicRoots {
		if dir == r || strings.HasPrefix(dir, r+"/") {
			return true
		}
	}
	return false
}

func report(w *os.File, stats map[string]*pkgStat, funcs []fn, top int) {
	dirs := make([]string, 0, len(stats))
	for d := range stats {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "## Non-test Go lines per package")
	fmt.Fprintln(tw, "lines\tfiles\ttest lines\tpackage\t")
	var total, totalTest, totalMap, totalMapT int
	for _, d := range dirs {
		s := stats[d]
		total += s.lines
		totalTest += s.testLines
		totalMap += s.mapAny
		totalMapT += s.mapAnyT
		if s.lines == 0 && s.testLines == 0 {
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t\n", s.lines, s.files, s.testLines, d)
	}
	fmt.Fprintf(tw, "%d\t\t%d\t%s\t\n", total, totalTest, "total")
	tw.Flush()

	sort.SliceStable(funcs, func(i, j int) bool {
		if funcs[i].lines != funcs[j].lines {
			return funcs[i].lines > funcs[j].lines
		}
		return funcs[i].pos < funcs[j].pos
	})
	if len(funcs) > top {
		funcs = funcs[:top]
	}
	fmt.Fprintf(w, "\n## The %d largest non-test functions (lines, declaration to closing brace)\n", top)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "lines\tpackage\tfunction\tat")
	for _, f := range funcs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", f.lines, f.pkg, f.name, f.pos)
	}
	tw.Flush()

	fmt.Fprintln(w, "\n## Exported names per public package (non-test files)")
	fmt.Fprintln(w, "top-level = exported funcs, types, vars and consts; methods = exported methods on exported types")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "top-level\tmethods\tpackage\t")
	var pubTop, pubMeth int
	for _, d := range dirs {
		s := stats[d]
		if !isPublic(d) || s.files == 0 {
			continue
		}
		pubTop += s.exported
		pubMeth += s.methods
		fmt.Fprintf(tw, "%d\t%d\t%s\t\n", s.exported, s.methods, d)
	}
	fmt.Fprintf(tw, "%d\t%d\t%s\t\n", pubTop, pubMeth, "total")
	tw.Flush()

	fmt.Fprintln(w, "\n## map[string]any (or map[string]interface{}) types written out")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "non-test\ttest\tpackage\t")
	for _, d := range dirs {
		s := stats[d]
		if s.mapAny == 0 && s.mapAnyT == 0 {
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t\n", s.mapAny, s.mapAnyT, d)
	}
	fmt.Fprintf(tw, "%d\t%d\t%s\t\n", totalMap, totalMapT, "total")
	tw.Flush()
}
