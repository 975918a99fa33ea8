package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// sectionNames are the typed sections of internal/config: a struct there,
// or an alias of a struct elsewhere (the section's one definition).
var sectionNames = []string{"Dangerous", "LLM", "Tools", "Limits", "ModelPrice", "Subagent", "Sandbox", "Context"}

type structDecl struct {
	pkg, name string
	fields    []fieldDecl
}

type fieldDecl struct {
	name, env, json string
}

// reportSettings counts how many struct field declarations carry odek's
// settings: every environment variable (a field with an env tag) and
// every field of a config section, plus each struct elsewhere that
// copies a section (three quarters of its field names or more, a
// trailing "Seconds" ignored). One declaration per setting is the floor.
func reportSettings(w io.Writer, root string) error {
	structs := map[string]*structDecl{} // "pkg.Name"
	aliases := map[string]string{}      // "internal/config.Sandbox" → "internal/sandbox.Settings"
	imports := map[string]map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || name == "bench" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
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
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if imports[pkg] == nil {
			imports[pkg] = map[string]string{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			if i := strings.Index(p, "/odek/"); i >= 0 {
				imports[pkg][name] = p[i+len("/odek/"):]
			}
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Assign.IsValid() {
					if sel, ok := ts.Type.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok {
							aliases[pkg+"."+ts.Name.Name] = x.Name + "." + sel.Sel.Name // resolved below
						}
					}
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				sd := &structDecl{pkg: pkg, name: ts.Name.Name}
				for _, fld := range st.Fields.List {
					var tag reflect.StructTag
					if fld.Tag != nil {
						s, _ := strconv.Unquote(fld.Tag.Value)
						tag = reflect.StructTag(s)
					}
					env := tag.Get("env")
					js, _, _ := strings.Cut(tag.Get("json"), ",")
					for _, n := range fld.Names {
						sd.fields = append(sd.fields, fieldDecl{n.Name, env, js})
					}
				}
				structs[pkg+"."+ts.Name.Name] = sd
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Resolve aliases' package names through the aliasing file's imports.
	for k, v := range aliases {
		pkg := k[:strings.LastIndex(k, ".")]
		name, typ, _ := strings.Cut(v, ".")
		if p, ok := imports[pkg][name]; ok {
			aliases[k] = p + "." + typ
		}
	}

	envDecls, envNames := 0, map[string]bool{}
	for _, sd := range structs {
		for _, f := range sd.fields {
			if f.env != "" {
				envDecls++
				envNames[f.env] = true
			}
		}
	}

	norm := func(n string) string { return strings.TrimSuffix(n, "Seconds") }
	var secDecls, secSettings int
	var copies []string
	for _, s := range sectionNames {
		key := "internal/config." + s
		if a, ok := aliases[key]; ok {
			key = a
		}
		def := structs[key]
		if def == nil {
			return fmt.Errorf("section %s: no struct %s", s, key)
		}
		names := map[string]bool{}
		for _, f := range def.fields {
			names[norm(f.name)] = true
		}
		secSettings += len(def.fields)
		secDecls += len(def.fields)
		for k, sd := range structs {
			if k == key || len(sd.fields) < 2 || sd.pkg == "internal/config" && sd.name == s {
				continue
			}
			same := 0
			for _, f := range sd.fields {
				if names[norm(f.name)] {
					same++
				}
			}
			if same*4 >= len(names)*3 && same*4 >= len(sd.fields)*3 {
				secDecls += len(sd.fields)
				copies = append(copies, fmt.Sprintf("%s copies %s (%d fields)", k, s, len(sd.fields)))
			}
		}
	}
	sort.Strings(copies)
	fmt.Fprintf(w, "\n## Settings: field declarations per setting\n")
	fmt.Fprintf(w, "environment variables: %d declarations for %d variables\n", envDecls, len(envNames))
	fmt.Fprintf(w, "config sections: %d declarations for %d settings\n", secDecls, secSettings)
	for _, c := range copies {
		fmt.Fprintf(w, "  %s\n", c)
	}
	fmt.Fprintf(w, "total: %d declarations for %d settings\n", envDecls+secDecls, len(envNames)+secSettings)
	return nil
}
