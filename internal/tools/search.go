package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

type searchFilesTool struct{ c *config }

type searchArgs struct {
	Pattern    *string `json:"pattern"`
	Path       *string `json:"path"`
	Glob       *string `json:"glob"`
	MaxMatches *int    `json:"max_matches"`
}

func (t *searchFilesTool) Definition() Definition {
	return Definition{
		Name: "search_files",
		Description: "Search file contents with a Go (RE2) regular expression. Prints 'path:line: text' per match. " +
			"Skips .git, node_modules and binary files.",
		Parameters: schema([]string{"pattern"}, `"pattern":{"type":"string","description":"Go regexp syntax"},`+
			`"path":{"type":"string","description":"File or directory to search (default \".\")"},`+
			`"glob":{"type":"string","description":"Only files whose name matches this glob (e.g. *.go); a glob with '/' matches the path relative to path"},`+
			`"max_matches":{"type":"integer","minimum":1,"description":"Stop after this many matches"}`),
	}
}

func (t *searchFilesTool) Assess(args json.RawMessage) (Assessment, error) {
	if err := invalidJSON("search_files", args); err != nil {
		return Assessment{}, err
	}
	var a searchArgs
	_ = decodeArgs("search_files", args, &a)
	return pathSummary(nonEmpty(deref(a.Path), "."), ClassSafe), nil
}

func (t *searchFilesTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	var a searchArgs
	if err := decodeArgs("search_files", args, &a); err != nil {
		return errResult(err), nil
	}
	if a.Pattern == nil || *a.Pattern == "" {
		return errResult(&argError{"search_files", "pattern", "required"}), nil
	}
	re, err := regexp.Compile(*a.Pattern)
	if err != nil {
		return errResult(&argError{"search_files", "pattern", "invalid regular expression: " + err.Error()}), nil
	}
	glob := deref(a.Glob)
	if glob != "" {
		if _, err := filepath.Match(glob, ""); err != nil {
			return errResult(&argError{"search_files", "glob", "invalid glob: " + err.Error()}), nil
		}
	}
	limit := t.c.maxSearchMatches
	note := ""
	if a.MaxMatches != nil {
		switch {
		case *a.MaxMatches < 1:
			return errResult(&argError{"search_files", "max_matches", fmt.Sprintf("must be >= 1, got %d", *a.MaxMatches)}), nil
		case *a.MaxMatches > HardMaxSearchMatches:
			limit = HardMaxSearchMatches
			note = fmt.Sprintf(" (max_matches %d lowered to the hard limit %d)", *a.MaxMatches, HardMaxSearchMatches)
		default:
			limit = *a.MaxMatches
		}
	}
	p := nonEmpty(deref(a.Path), ".")
	tg, err := t.c.locate(p)
	if err != nil {
		return Result{Text: "search_files: " + err.Error(), IsError: true}, nil
	}
	defer tg.close()
	root := tg.name
	if fi, err := tg.fs.Stat(root); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return Result{Text: "search_files: " + (&SpecialFileError{Path: p, Type: typeName(fi.Mode()), Want: "a regular file or a directory"}).Error(), IsError: true}, nil
	}
	var out strings.Builder
	matches, files := 0, 0
	stopped, spent := false, false
	budget := t.c.maxSearchBytes
	w := walker{ctx: ctx, f: tg.fs, limit: t.c.maxDirEntries}
	walkErr := w.walk(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // unreadable entries are skipped
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // a FIFO, socket or device is never opened
		}
		if glob != "" {
			name := d.Name()
			if strings.Contains(glob, "/") {
				name, _ = filepath.Rel(root, path)
				name = filepath.ToSlash(name)
			}
			if ok, _ := filepath.Match(glob, name); !ok {
				return nil
			}
		}
		if budget <= 0 {
			spent = true
			return filepath.SkipAll
		}
		files++
		n, full, err := t.c.searchFile(ctx, tg.fs, path, re, limit-matches, &out, &budget)
		matches += n
		if err != nil {
			return err
		}
		if full {
			stopped = true
			return filepath.SkipAll
		}
		return nil
	})
	if walkErr != nil {
		if ctx.Err() != nil {
			return Result{Text: "search_files: " + ctx.Err().Error(), IsError: true}, ctx.Err()
		}
		return Result{Text: "search_files: " + t.c.pathError(p, walkErr).Error(), IsError: true}, nil
	}
	var notes string
	if spent {
		notes += fmt.Sprintf("[stopped after reading %s, the most search_files reads in one call; narrow the path or glob]\n", sizeText(t.c.maxSearchBytes))
	}
	if len(w.partial) > 0 {
		notes += fmt.Sprintf("[%s: more than %d entries; only the first %d read were searched]\n", strings.Join(w.partial, ", "), t.c.maxDirEntries, t.c.maxDirEntries)
	}
	var hdr string
	switch {
	case stopped:
		hdr = fmt.Sprintf("[%d matches in %s; stopped at the limit of %d%s, narrow the pattern, path or glob]\n", matches, p, limit, note)
	case matches == 0:
		return Result{Text: notes + fmt.Sprintf("[no matches for %q in %s (%d files searched)]", *a.Pattern, p, files)}, nil
	default:
		hdr = fmt.Sprintf("[%d matches in %s (%d files searched)]\n", matches, p, files)
	}
	return Result{Text: hdr + notes + out.String()}, nil
}

// searchFile appends up to room matches of re in the file at path to out.
// full reports that room was reached. Binary files, files above
// maxSearchFileBytes and anything but a regular file (checked on the open
// descriptor) are skipped. It reads at most *budget bytes, and takes what
// it read from it; err is ctx's error when the call was cancelled.
func (c *config) searchFile(ctx context.Context, fsy fsys, path string, re *regexp.Regexp, room int, out *strings.Builder, budget *int64) (n int, full bool, err error) {
	f, fi, err := openChecked(fsy, path, path)
	if err != nil {
		return 0, false, nil
	}
	defer f.Close()
	if fi.Size() > maxSearchFileBytes {
		return 0, false, nil
	}
	allowed := min(int64(maxSearchFileBytes), *budget) // the file may have grown since fstat
	src := &boundedReader{ctx: ctx, r: f, left: allowed}
	defer func() { *budget -= allowed - src.left }()
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(src)
	defer func() { br.Reset(nil); readerPool.Put(br) }()
	if head, _ := br.Peek(sniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return 0, false, src.ctxErr
	}
	display := path
	if !c.confine {
		display = c.display(path)
	}
	line := 0
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: collect it (bounded by src).
			long = append(long, chunk...)
			continue
		}
		text := chunk
		if long != nil {
			long = append(long, chunk...)
			text = long
		}
		if len(text) > 0 {
			line++
			text = bytes.TrimRight(text, "\r\n")
			if re.Match(text) {
				fmt.Fprintf(out, "%s:%d: %s\n", display, line, Clip(string(text), maxMatchLine))
				n++
				if n >= room {
					return n, true, nil
				}
			}
		}
		long = nil
		if err != nil {
			return n, false, src.ctxErr
		}
	}
}

// walker walks a tree through f (so a confined walk stays in its root),
// reading each directory with readDir (bounded, looking at ctx between
// batches, at most limit entries each). partial collects the directories
// that had more.
type walker struct {
	ctx     context.Context
	f       fsys
	limit   int
	partial []string
}

// walk calls fn for root and everything below it, depth first in name
// order, like filepath.WalkDir. Symlinks are reported, never followed.
// fn may return filepath.SkipDir or filepath.SkipAll.
func (w *walker) walk(root string, fn func(path string, d fs.DirEntry, err error) error) error {
	fi, err := w.f.Stat(root) // a root that is a link is walked (in a confined walk, only inside the root)
	if err != nil {
		return fn(root, nil, err)
	}
	err = w.entry(root, fs.FileInfoToDirEntry(fi), fn)
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func (w *walker) entry(path string, d fs.DirEntry, fn func(string, fs.DirEntry, error) error) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if err := fn(path, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	ents, more, err := readDir(w.ctx, w.f, path, path, w.limit)
	if err != nil {
		if cerr := w.ctx.Err(); cerr != nil {
			return cerr
		}
		if err := fn(path, d, err); err != nil {
			if err == filepath.SkipDir {
				return nil
			}
			return err
		}
	}
	if more {
		w.partial = append(w.partial, path)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if err := w.entry(filepath.Join(path, e.Name()), e, fn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
