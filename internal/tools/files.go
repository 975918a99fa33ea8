package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/odekrun/odek/internal/clip"
)

// Read defaults and limits.
const (
	defaultReadLimit = 2000
	// sniffBytes is how much of a file decides whether it is binary.
	sniffBytes = 8000
	// maxListEntries bounds list_dir output.
	maxListEntries = 1000
	maxListDepth   = 5
	// maxMatchLine bounds the text of one search match.
	maxMatchLine = 300
	// maxSearchFileBytes: larger files are skipped by search_files.
	maxSearchFileBytes = 16 << 20
)

// Read limits of the file tools, in bytes: each call reads at most this
// much, whatever the file holds (a sparse file of any size, a line without
// an end), and looks at its context every readChunk bytes.
const (
	// MaxReadScanBytes is the most read_file reads of one file in one
	// call, from its start: lines that begin after it are out of its
	// reach (the error says so; the shell's tail or sed reach them), and a
	// larger file's line count is shown as "at least".
	MaxReadScanBytes = 64 << 20
	// MaxPatchBytes is the largest file patch edits. patch holds the file
	// and its edited copy in memory, so a larger file, or an edit that
	// would make it larger, is refused before anything is read.
	MaxPatchBytes = 8 << 20
	// MaxSearchBytes is the most search_files reads in one call, over all
	// the files it searches; it stops there and says so.
	MaxSearchBytes = 256 << 20
)

// readerPool recycles the 64 KiB buffered readers of read_file and
// search_files so small reads do not allocate them.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

type readFileTool struct{ c *config }

type readFileArgs struct {
	Path   *string `json:"path"`
	Offset *int    `json:"offset"`
	Limit  *int    `json:"limit"`
}

func (t *readFileTool) Definition() Definition {
	return Definition{
		Name: "read_file",
		Description: "Read a text file. Returns numbered lines (line number, tab, text) after a header giving the " +
			"range shown and the total line count. Use offset and limit to page through large files.",
		Parameters: schema([]string{"path"}, `"path":{"type":"string","description":"File path, relative to the working directory or absolute"},`+
			`"offset":{"type":"integer","minimum":1,"description":"First line to return, 1-based (default 1)"},`+
			`"limit":{"type":"integer","minimum":1,"description":"Maximum number of lines (default 2000)"}`),
	}
}

func (t *readFileTool) Assess(args json.RawMessage) (Assessment, error) {
	var a readFileArgs
	if err := invalidJSON("read_file", args); err != nil {
		return Assessment{}, err
	}
	_ = decodeArgs("read_file", args, &a)
	return pathSummary(deref(a.Path), ClassSafe), nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

func (t *readFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	var a readFileArgs
	if err := decodeArgs("read_file", args, &a); err != nil {
		return errResult(err), nil
	}
	if a.Path == nil || *a.Path == "" {
		return errResult(&argError{"read_file", "path", "required"}), nil
	}
	offset, limit := 1, defaultReadLimit
	if a.Offset != nil {
		if *a.Offset < 1 {
			return errResult(&argError{"read_file", "offset", fmt.Sprintf("must be >= 1, got %d", *a.Offset)}), nil
		}
		offset = *a.Offset
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return errResult(&argError{"read_file", "limit", fmt.Sprintf("must be >= 1, got %d", *a.Limit)}), nil
		}
		limit = *a.Limit
	}
	return t.c.readFile(ctx, *a.Path, offset, limit)
}

// readFile renders lines [offset, offset+limit) of the file at p. It
// reads at most c.maxScanBytes of the file, through a boundedReader that
// sees a cancel within readChunk bytes; a cancel returns ctx's error.
func (c *config) readFile(ctx context.Context, p string, offset, limit int) (Result, error) {
	tg, err := c.locate(p)
	if err != nil {
		return Result{Text: "read_file: " + err.Error(), IsError: true}, nil
	}
	defer tg.close()
	f, _, err := openRegular(tg.fs, tg.name, p)
	if err != nil {
		if se := (*SpecialFileError)(nil); errors.As(err, &se) && se.Type == "directory" {
			return Result{Text: fmt.Sprintf("read_file: %s is a directory; use list_dir", p), IsError: true}, nil
		}
		return Result{Text: "read_file: " + c.pathError(p, err).Error(), IsError: true}, nil
	}
	defer f.Close()
	src := &boundedReader{ctx: ctx, r: f, left: c.maxScanBytes}
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(src)
	defer func() { br.Reset(nil); readerPool.Put(br) }()

	var out bytes.Buffer
	var (
		line    = 0    // number of the line being read
		atStart = true // the next byte starts a line
		seen    = 0    // bytes seen, for the binary sniff
		last    = 0    // last line written to out
		capped  = false
		limited = false // stopped at c.maxScanBytes
		cut     = false // ... in the middle of the last line shown
	)
	numBuf := make([]byte, 0, 24)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if seen < sniffBytes {
				n := min(len(chunk), sniffBytes-seen)
				if bytes.IndexByte(chunk[:n], 0) >= 0 {
					return Result{Text: fmt.Sprintf("read_file: %s looks binary (NUL byte in the first %d bytes); not shown", p, sniffBytes), IsError: true}, nil
				}
				seen += n
			}
			if atStart {
				line++
			}
			if line >= offset && line < offset+limit && !capped {
				if atStart {
					numBuf = strconv.AppendInt(numBuf[:0], int64(line), 10)
					numBuf = append(numBuf, '\t')
					if out.Len()+len(numBuf)+len(chunk) > c.maxReadBytes && last > 0 {
						capped = true
					} else {
						out.Write(numBuf)
					}
				}
				if !capped {
					room := c.maxReadBytes - out.Len()
					if len(chunk) > room {
						out.WriteString(string(chunk[:clip.RuneStartBefore(string(chunk), max(room, 0))]))
						out.WriteString("\n")
						capped = true
					} else {
						out.Write(chunk)
					}
					last = line
				}
			}
			atStart = chunk[len(chunk)-1] == '\n'
		}
		if err == nil || err == bufio.ErrBufferFull {
			continue // a long line goes on; src looks at ctx every readChunk bytes
		}
		if err == io.EOF {
			break
		}
		if err == errReadLimit {
			limited = true
			cut = last == line && !atStart && !capped // the last line shown goes on past the limit
			break
		}
		if src.ctxErr != nil {
			return Result{Text: "read_file: " + p + ": " + src.ctxErr.Error(), IsError: true}, src.ctxErr
		}
		if errors.Is(err, syscall.EISDIR) {
			return Result{Text: fmt.Sprintf("read_file: %s is a directory; use list_dir", p), IsError: true}, nil
		}
		return Result{Text: "read_file: " + err.Error(), IsError: true}, nil
	}
	total := line
	if total == 0 {
		return Result{Text: fmt.Sprintf("[%s: empty file]", p)}, nil
	}
	scanLimit := sizeText(c.maxScanBytes)
	if offset > total {
		if limited {
			return Result{Text: fmt.Sprintf("read_file: offset %d is past the first %s of %s (%d lines), the most read_file reads of a file in one call; "+
				"read later parts with the shell (e.g. tail -n, sed -n '%d,%dp')", offset, scanLimit, p, total, offset, offset+limit-1), IsError: true}, nil
		}
		return Result{Text: fmt.Sprintf("read_file: offset %d is past the end of %s (%d lines)", offset, p, total), IsError: true}, nil
	}
	if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
		out.WriteByte('\n')
	}
	of := strconv.Itoa(total)
	if limited {
		of = fmt.Sprintf("at least %d (counting stopped after %s, the most read_file reads of a file in one call)", total, scanLimit)
	}
	var hdr string
	switch {
	case cut:
		hdr = fmt.Sprintf("[%s: lines %d-%d of %s; line %d goes on past that limit and is cut there]\n", p, offset, last, of, last)
	case capped:
		hdr = fmt.Sprintf("[%s: lines %d-%d of %s; output capped at %d bytes; continue with offset=%d]\n", p, offset, last, of, c.maxReadBytes, last+1)
	case last < total || limited:
		hdr = fmt.Sprintf("[%s: lines %d-%d of %s; more remain, continue with offset=%d]\n", p, offset, last, of, last+1)
	default:
		hdr = fmt.Sprintf("[%s: lines %d-%d of %s; end of file]\n", p, offset, last, of)
	}
	return Result{Text: hdr + out.String()}, nil
}

type writeFileTool struct{ c *config }

type writeFileArgs struct {
	Path    *string `json:"path"`
	Content *string `json:"content"`
}

func (t *writeFileTool) Definition() Definition {
	return Definition{
		Name:        "write_file",
		Description: "Create or overwrite a file with the given content, creating parent directories. The write is atomic.",
		Parameters: schema([]string{"path", "content"}, `"path":{"type":"string","description":"File path, relative to the working directory or absolute"},`+
			`"content":{"type":"string","description":"The complete new file content"}`),
	}
}

func (t *writeFileTool) Assess(args json.RawMessage) (Assessment, error) {
	if err := invalidJSON("write_file", args); err != nil {
		return Assessment{}, err
	}
	var a writeFileArgs
	_ = decodeArgs("write_file", args, &a)
	return t.c.writeAssessment(deref(a.Path)), nil
}

// writeAssessment classifies writing to p: local_write inside the
// working directory (symlinks resolved), system_write elsewhere. A
// confined run can only write inside its root, so every path it accepts
// is local. A path where a write can plant a program git or cargo runs
// on an everyday command (programFile: .git/, .gitattributes, ...), by its
// name or through a symlink, is at least code_execution, as for the
// shell.
func (c *config) writeAssessment(p string) Assessment {
	a := c.placeAssessment(p)
	if Severity(a.Class) < Severity(ClassCodeExecution) && c.plantsProgram(p) {
		a = pathSummary(p, ClassCodeExecution)
	}
	return a
}

// plantsProgram reports whether writing p writes a programFile, by the
// name given or by the name its existing part resolves to.
func (c *config) plantsProgram(p string) bool {
	if programFile(filepath.ToSlash(p)) != "" {
		return true
	}
	abs := c.resolve(p)
	if programFile(filepath.ToSlash(c.display(abs))) != "" {
		return true
	}
	// A symlink in the existing part may lead into a .git directory.
	return programFile(resolveExisting(c.workDir, abs)) != ""
}

// placeAssessment classifies writing to p by where it is.
func (c *config) placeAssessment(p string) Assessment {
	if c.confine {
		if _, err := Locate(c.workDir, p); err == nil {
			return pathSummary(p, ClassLocalWrite)
		}
		return pathSummary(p, ClassSystemWrite)
	}
	if c.inside(c.resolve(p)) {
		return pathSummary(p, ClassLocalWrite)
	}
	return pathSummary(p, ClassSystemWrite)
}

func (t *writeFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	release, err := t.c.gate.lock(ctx, false) // not while a line runs git (gitline.go)
	if err != nil {
		return errResult(fmt.Errorf("write_file: not run: %w", err)), err
	}
	defer release()
	var a writeFileArgs
	if err := decodeArgs("write_file", args, &a); err != nil {
		return errResult(err), nil
	}
	if a.Path == nil || *a.Path == "" {
		return errResult(&argError{"write_file", "path", "required"}), nil
	}
	if a.Content == nil {
		return errResult(&argError{"write_file", "content", "required"}), nil
	}
	tg, err := t.c.locate(*a.Path)
	if err != nil {
		return Result{Text: "write_file: " + err.Error(), IsError: true}, nil
	}
	defer tg.close()
	if err := tg.fs.MkdirAll(filepath.Dir(tg.name), 0o755); err != nil {
		return Result{Text: "write_file: " + t.c.pathError(*a.Path, err).Error(), IsError: true}, nil
	}
	if err := t.c.atomicWrite(tg.fs, tg.name, []byte(*a.Content)); err != nil {
		return Result{Text: "write_file: " + t.c.pathError(*a.Path, err).Error(), IsError: true}, nil
	}
	return Result{Text: fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), *a.Path)}, nil
}

type listDirTool struct{ c *config }

type listDirArgs struct {
	Path  *string `json:"path"`
	Depth *int    `json:"depth"`
}

func (t *listDirTool) Definition() Definition {
	return Definition{
		Name:        "list_dir",
		Description: "List a directory. Directories end in '/', files show their size in bytes. depth > 1 recurses (max 5).",
		Parameters: schema(nil, `"path":{"type":"string","description":"Directory (default \".\")"},`+
			`"depth":{"type":"integer","minimum":1,"maximum":5,"description":"Levels to list (default 1)"}`),
	}
}

func (t *listDirTool) Assess(args json.RawMessage) (Assessment, error) {
	if err := invalidJSON("list_dir", args); err != nil {
		return Assessment{}, err
	}
	var a listDirArgs
	_ = decodeArgs("list_dir", args, &a)
	return pathSummary(nonEmpty(deref(a.Path), "."), ClassSafe), nil
}

func (t *listDirTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	var a listDirArgs
	if err := decodeArgs("list_dir", args, &a); err != nil {
		return errResult(err), nil
	}
	p := nonEmpty(deref(a.Path), ".")
	depth := 1
	if a.Depth != nil {
		if *a.Depth < 1 || *a.Depth > maxListDepth {
			return errResult(&argError{"list_dir", "depth", fmt.Sprintf("must be 1 to %d, got %d", maxListDepth, *a.Depth)}), nil
		}
		depth = *a.Depth
	}
	tg, err := t.c.locate(p)
	if err != nil {
		return Result{Text: "list_dir: " + err.Error(), IsError: true}, nil
	}
	defer tg.close()
	fi, err := tg.fs.Stat(tg.name)
	if err != nil {
		return Result{Text: "list_dir: " + t.c.pathError(p, err).Error(), IsError: true}, nil
	}
	switch {
	case fi.Mode().IsRegular():
		return Result{Text: fmt.Sprintf("list_dir: %s is not a directory (%d bytes)", p, fi.Size()), IsError: true}, nil
	case !fi.IsDir():
		return Result{Text: "list_dir: " + (&SpecialFileError{Path: p, Type: typeName(fi.Mode()), Want: wantDir}).Error(), IsError: true}, nil
	}
	var lines, partial []string
	truncated := false
	var walk func(dir, rel string, level int) error
	walk = func(dir, rel string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, more, err := readDir(ctx, tg.fs, dir, nonEmpty(rel, p), t.c.maxDirEntries)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			lines = append(lines, rel+"  [unreadable: "+t.c.pathError(p, err).Error()+"]")
			return nil
		}
		if more {
			partial = append(partial, nonEmpty(rel, p))
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			if len(lines) >= maxListEntries {
				truncated = true
				return nil
			}
			name := rel + e.Name()
			switch typ := e.Type(); {
			case e.IsDir():
				lines = append(lines, name+"/")
				if level < depth && !skipDir(e.Name()) {
					if err := walk(filepath.Join(dir, e.Name()), name+"/", level+1); err != nil {
						return err
					}
				}
			case typ&fs.ModeSymlink != 0:
				target, _ := tg.fs.Readlink(filepath.Join(dir, e.Name()))
				lines = append(lines, name+" -> "+target)
			case typ != 0:
				lines = append(lines, name+"  ["+typeName(typ)+"]") // a FIFO, socket or device: named, never opened
			default:
				info, err := e.Info()
				if err != nil {
					lines = append(lines, name)
					continue
				}
				lines = append(lines, fmt.Sprintf("%s  %d bytes", name, info.Size()))
			}
		}
		return nil
	}
	if err := walk(tg.name, "", 1); err != nil {
		return Result{Text: "list_dir: " + err.Error(), IsError: true}, err
	}
	hdr := fmt.Sprintf("[%s: %d entries, depth %d]\n", p, len(lines), depth)
	body := strings.Join(lines, "\n")
	if truncated {
		body += fmt.Sprintf("\n[truncated at %d entries; list a subdirectory or use a smaller depth]", maxListEntries)
	}
	if len(partial) > 0 {
		body += fmt.Sprintf("\n[%s: more than %d entries; only the first %d read were sorted and listed]", strings.Join(partial, ", "), t.c.maxDirEntries, t.c.maxDirEntries)
	}
	return Result{Text: hdr + body}, nil
}

// skipDir names directories that listings and searches do not descend
// into.
func skipDir(name string) bool {
	return name == ".git" || name == "node_modules" || name == ".hg" || name == ".svn"
}

type patchTool struct{ c *config }

type patchArgs struct {
	Path       *string `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll *bool   `json:"replace_all"`
}

func (t *patchTool) Definition() Definition {
	return Definition{
		Name: "patch",
		Description: "Replace exact text in a file. old_string must occur exactly once (include surrounding lines to make it unique) " +
			"unless replace_all is true. Line numbers from read_file are not part of the file.",
		Parameters: schema([]string{"path", "old_string", "new_string"}, `"path":{"type":"string"},`+
			`"old_string":{"type":"string","description":"Exact text to replace"},`+
			`"new_string":{"type":"string","description":"Replacement text"},`+
			`"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)"}`),
	}
}

func (t *patchTool) Assess(args json.RawMessage) (Assessment, error) {
	if err := invalidJSON("patch", args); err != nil {
		return Assessment{}, err
	}
	var a patchArgs
	_ = decodeArgs("patch", args, &a)
	return t.c.writeAssessment(deref(a.Path)), nil
}

func (t *patchTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	release, err := t.c.gate.lock(ctx, false) // not while a line runs git (gitline.go)
	if err != nil {
		return errResult(fmt.Errorf("patch: not run: %w", err)), err
	}
	defer release()
	var a patchArgs
	if err := decodeArgs("patch", args, &a); err != nil {
		return errResult(err), nil
	}
	switch {
	case a.Path == nil || *a.Path == "":
		return errResult(&argError{"patch", "path", "required"}), nil
	case a.OldString == nil || *a.OldString == "":
		return errResult(&argError{"patch", "old_string", "required and must not be empty"}), nil
	case a.NewString == nil:
		return errResult(&argError{"patch", "new_string", "required"}), nil
	}
	tg, err := t.c.locate(*a.Path)
	if err != nil {
		return Result{Text: "patch: " + err.Error(), IsError: true}, nil
	}
	defer tg.close()
	data, err := t.c.readForEdit(ctx, tg.fs, tg.name, *a.Path)
	if err != nil {
		if ctx.Err() != nil {
			return Result{Text: "patch: " + err.Error(), IsError: true}, ctx.Err()
		}
		return Result{Text: "patch: " + t.c.pathError(*a.Path, err).Error(), IsError: true}, nil
	}
	old, repl := []byte(*a.OldString), []byte(*a.NewString)
	n := bytes.Count(data, old)
	switch {
	case n == 0:
		return Result{Text: fmt.Sprintf("patch: old_string not found in %s (0 matches); read the file and copy the text exactly", *a.Path), IsError: true}, nil
	case n > 1 && !deref(a.ReplaceAll):
		return Result{Text: fmt.Sprintf("patch: old_string matches %d times in %s; add surrounding context to make it unique, or set replace_all", n, *a.Path), IsError: true}, nil
	}
	if size := int64(len(data)) + int64(n)*(int64(len(repl))-int64(len(old))); size > t.c.maxPatchBytes {
		return Result{Text: fmt.Sprintf("patch: the patched %s would be %d bytes, above patch's limit of %d bytes (%s); edit it with the shell instead",
			*a.Path, size, t.c.maxPatchBytes, sizeText(t.c.maxPatchBytes)), IsError: true}, nil
	}
	content := bytes.Replace(data, old, repl, n)
	if err := t.c.atomicWrite(tg.fs, tg.name, content); err != nil {
		return Result{Text: "patch: " + t.c.pathError(*a.Path, err).Error(), IsError: true}, nil
	}
	return Result{Text: fmt.Sprintf("patched %s: replaced %d occurrence(s); file is now %d bytes", *a.Path, n, len(content))}, nil
}

// FileTooLargeError is a file above the size a tool edits, refused before
// it is read.
type FileTooLargeError struct {
	Path  string // as the model gave it
	Size  int64  // bytes, as fstat saw it (or as far as it was read)
	Limit int64  // bytes
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, above patch's limit of %d bytes (%s); edit it with the shell instead",
		e.Path, e.Size, e.Limit, sizeText(e.Limit))
}

// readForEdit reads the whole regular file name of f, which must be at
// most c.maxPatchBytes: the size is checked on the open descriptor before
// any byte is read, and the read stops one byte past the limit should the
// file have grown since (memory: one buffer of the file's size).
func (c *config) readForEdit(ctx context.Context, f fsys, name, display string) ([]byte, error) {
	fh, fi, err := openRegular(f, name, display)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if fi.Size() > c.maxPatchBytes {
		return nil, &FileTooLargeError{Path: display, Size: fi.Size(), Limit: c.maxPatchBytes}
	}
	src := &boundedReader{ctx: ctx, r: fh, left: c.maxPatchBytes + 1}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(src); err != nil && err != errReadLimit {
		return nil, err
	}
	if int64(buf.Len()) > c.maxPatchBytes {
		return nil, &FileTooLargeError{Path: display, Size: int64(buf.Len()), Limit: c.maxPatchBytes}
	}
	return buf.Bytes(), nil
}
